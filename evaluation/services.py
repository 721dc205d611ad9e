"""Writes of the evaluation context: import a benchmark, accept a bundle, and the four pipeline
stages (ingest -> detect -> judge -> aggregate). Celery tasks in tasks.py call these by id."""

from __future__ import annotations

import hashlib
import json
import logging
import time
import zipfile
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.bundles import BundleRejected, ValidationReport, manifest_check, scan_zip
from evaluation.judges import (
    GeminiClient,
    JudgeError,
    JudgeReply,
    OpenAICompatibleClient,
    call_with_retries,
)
from evaluation.models import (
    Benchmark,
    Judge,
    Judgment,
    PromptVersion,
    Score,
    Submission,
    System,
    Task,
    TaskJudgment,
    TaskResult,
    Team,
)
from evaluation.selectors import current_prompts, task_spec
from evaluation.throttle import EndpointSlots

logger = logging.getLogger(__name__)

OFFLINE_MODEL = "offline-heuristic-v1"
# MP-Bench's official judge (README of the benchmark: gpt-5.4, and gpt-5.2 for speaker names).
MPBENCH_OFFICIAL_MODELS = {
    "understanding": "gpt-5.4",
    "discussion": "gpt-5.4",
    "turnbased": "gpt-5.4",
    "speaker_name": "gpt-5.2",
}
SQL_IN_BATCH = 500


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- Benchmarks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportSummary:
    benchmark: Benchmark
    tasks_created: int
    tasks_updated: int
    prompts_added: list[str]


@transaction.atomic
def benchmark_import(
    *, slug: str, directory: Path, plugin: str = "mp-bench", name: str = "", is_demo: bool = False
) -> ImportSummary:
    """Idempotent. A changed prompt becomes a new version; earlier versions and the judgments
    made with them are kept."""
    source = get_plugin(plugin).read_source(Path(directory))
    benchmark, _ = Benchmark.objects.get_or_create(
        slug=slug, defaults={"name": name or slug, "plugin": plugin, "is_demo": is_demo}
    )
    existing = {task.task_id: task for task in benchmark.tasks.all()}
    created, updated = [], []
    fields = [
        "family",
        "should_speak",
        "metatranscript",
        "question_text",
        "answer_text",
        "is_speaker_name",
    ]
    for spec in source.tasks:
        values = {field: getattr(spec, field) for field in fields}
        task = existing.get(spec.task_id)
        if task is None:
            created.append(Task(benchmark=benchmark, task_id=spec.task_id, **values))
        elif any(getattr(task, f) != v for f, v in values.items()):
            for f, v in values.items():
                setattr(task, f, v)
            updated.append(task)
    Task.objects.bulk_create(created, batch_size=SQL_IN_BATCH)
    Task.objects.bulk_update(updated, fields, batch_size=SQL_IN_BATCH)

    current = current_prompts(benchmark=benchmark)
    added = []
    for prompt in source.prompts:
        sha = _sha256(prompt.template + json.dumps(prompt.schema, sort_keys=True))
        latest = current.get(prompt.kind)
        if latest is not None and latest.sha256 == sha:
            continue
        PromptVersion.objects.create(
            benchmark=benchmark,
            kind=prompt.kind,
            version=(latest.version + 1) if latest else 1,
            template=prompt.template,
            schema=prompt.schema,
            sha256=sha,
        )
        added.append(prompt.kind)
    _ensure_default_judges(benchmark)
    if not is_demo:
        reported_rows_load(benchmark=benchmark)
    return ImportSummary(benchmark, len(created), len(updated), added)


def reported_rows_load(*, benchmark: Benchmark) -> int:
    """Preload the numbers the benchmark's paper reports, labelled as such. Idempotent."""
    plugin = get_plugin(benchmark.plugin)
    loaded = 0
    for name, system_type, results in plugin.reported_rows():
        system, _ = System.objects.get_or_create(name=name, defaults={"system_type": system_type})
        _, created = Submission.objects.update_or_create(
            benchmark=benchmark,
            system=system,
            is_reported=True,
            defaults={
                "status": Submission.Status.SCORED,
                "reported_source": plugin.REPORTED_SOURCE,
                "reported_results": results,
            },
        )
        loaded += created
    return loaded


def _ensure_default_judges(benchmark: Benchmark) -> None:
    if benchmark.plugin == "mp-bench" and not benchmark.is_demo:
        Judge.objects.get_or_create(
            benchmark=benchmark,
            slug="official",
            defaults={
                "name": "MP-Bench official (gpt-5.4; gpt-5.2 for speaker names)",
                "provider": Judge.Provider.OPENAI,
                "models_by_kind": MPBENCH_OFFICIAL_MODELS,
                "is_official": True,
            },
        )
    Judge.objects.get_or_create(
        benchmark=benchmark,
        slug="offline",
        defaults={
            "name": "Offline heuristic judge (not an LLM)",
            "provider": Judge.Provider.OFFLINE,
            "models_by_kind": {},
        },
    )


# --- Bundles and submissions ---------------------------------------------------------------


def bundle_max_bytes(*, benchmark: Benchmark) -> int:
    """The largest uncompressed bundle accepted: the benchmark's own limit, or the site-wide
    one when that is smaller."""
    return min(
        get_plugin(benchmark.plugin).MAX_BUNDLE_UNCOMPRESSED_BYTES,
        settings.BUNDLE_MAX_UNCOMPRESSED_BYTES,
    )


def bundle_validate(*, benchmark: Benchmark, path: Path, allow_partial: bool):
    """(report, contents). Reads every transcript once; stores nothing."""
    plugin = get_plugin(benchmark.plugin)
    task_ids = set(benchmark.tasks.values_list("task_id", flat=True))
    # Room for one line per task (an incomplete bundle lists every missing task) besides the cap.
    report = ValidationReport(
        max_per_file=settings.REPORT_MAX_PER_FILE,
        max_total=settings.REPORT_MAX_PROBLEMS + len(task_ids),
    )
    archive, entries = scan_zip(
        path,
        report,
        is_task_folder=plugin.is_task_folder,
        max_uncompressed=bundle_max_bytes(benchmark=benchmark),
        max_ratio=settings.BUNDLE_MAX_COMPRESSION_RATIO,
        audio_limits=plugin.AUDIO_LIMITS,
    )
    if archive is None:
        return report, None
    with archive:
        contents = plugin.validate_contents(
            archive, entries, report, task_ids=task_ids, allow_partial=allow_partial
        )
    # The manifest fields that become System columns: checked here, where the columns are known.
    manifest_check(
        contents.manifest,
        report,
        choices={"system_type": list(System.SystemType.values)},
        max_lengths={
            name: System._meta.get_field(name).max_length
            for name in ("system_type", "organization")
        },
    )
    return report, contents


def _file_sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def submission_create(
    *,
    benchmark: Benchmark,
    bundle_path: Path,
    system_name: str,
    system_type: str = "",
    judge: Judge | None = None,
    allow_partial: bool = False,
    team: Team | None = None,
    submitted_by=None,
    publish: bool = False,
    idempotency_key: str = "",
    validated=None,
) -> Submission:
    """Validate, then store the bundle and queue it. A rejected bundle raises BundleRejected and
    leaves no row and no file behind. Unpublished submissions are visible to their team only.
    `validated`: the contents of a successful bundle_validate of this same file, so that it is
    not read twice."""
    if validated is None:
        report, validated = bundle_validate(
            benchmark=benchmark, path=bundle_path, allow_partial=allow_partial
        )
        if not report.ok:
            raise BundleRejected(report)
    contents = validated
    if judge is None:
        judge = benchmark.judges.filter(is_official=True).first()
        if judge is None:
            raise ValueError(f"benchmark {benchmark.slug} has no official judge; choose one")
    sha, size = _file_sha256(bundle_path)
    stored_name = None
    try:
        with transaction.atomic():
            system, created = System.objects.get_or_create(
                name=system_name,
                defaults={
                    "system_type": system_type
                    or contents.manifest.get("system_type")
                    or System.SystemType.REALTIME,
                    "organization": str(contents.manifest.get("organization", ""))[:200],
                    "metadata": contents.manifest,
                },
            )
            if not created and system_type and system.system_type != system_type:
                system.system_type = system_type
                system.save(update_fields=["system_type"])
            submission = Submission.objects.create(
                benchmark=benchmark,
                system=system,
                judge=judge,
                manifest=contents.manifest,
                is_partial=bool(contents.missing),
                missing_task_count=len(contents.missing),
                bundle_sha256=sha,
                bundle_size=size,
                team=team,
                submitted_by=submitted_by,
                is_published=publish,
                published_at=timezone.now() if publish else None,
                idempotency_key=idempotency_key,
            )
            with open(bundle_path, "rb") as handle:
                stored_name = default_storage.save(
                    f"bundles/{submission.pk}-{sha[:16]}.zip", File(handle)
                )
            submission.bundle.name = stored_name
            submission.save(update_fields=["bundle"])
            _enqueue_on_commit("ingest_submission", submission.pk)
    except BaseException:
        if stored_name:
            default_storage.delete(stored_name)
        raise
    return submission


def _enqueue_on_commit(task_name: str, *args) -> None:
    """Queue after the surrounding transaction commits (at once outside one)."""
    from evaluation import tasks  # tasks import this module

    transaction.on_commit(lambda: getattr(tasks, task_name).delay(*args))


def _claim_stage(submission_id: int, *, from_statuses: list[str], to_status: str) -> bool:
    """Move a submission into a stage; a redelivered message finds it already there and goes on."""
    return (
        Submission.objects.filter(pk=submission_id, status__in=[*from_statuses, to_status]).update(
            status=to_status
        )
        == 1
    )


def submission_fail(*, submission_id: int, error: str) -> None:
    Submission.objects.filter(pk=submission_id).exclude(status=Submission.Status.SCORED).update(
        status=Submission.Status.FAILED, error=error[:5000], finished_at=timezone.now()
    )


def _task_file_key(submission: Submission, task_id: str, relative: str) -> str:
    return f"submissions/{submission.pk}/{task_id}/{relative}"


def submission_ingest(*, submission_id: int) -> bool:
    """Copy every accepted file out of the stored zip into storage, streaming, and create one
    TaskResult per task of the benchmark (missing tasks get one with no files)."""
    if not _claim_stage(
        submission_id,
        from_statuses=[Submission.Status.QUEUED],
        to_status=Submission.Status.INGESTING,
    ):
        return False
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    plugin = get_plugin(submission.benchmark.plugin)
    tasks = dict(submission.benchmark.tasks.values_list("task_id", "pk"))
    files: dict[str, dict] = {task_id: {} for task_id in tasks}
    report = ValidationReport()
    with submission.bundle.open("rb") as handle:
        archive, entries = scan_zip(
            handle,
            report,
            is_task_folder=plugin.is_task_folder,
            max_uncompressed=settings.BUNDLE_MAX_UNCOMPRESSED_BYTES,
            max_ratio=settings.BUNDLE_MAX_COMPRESSION_RATIO,
        )
        if archive is None or not report.ok:
            raise ValueError(f"stored bundle no longer validates: {report.problems[:3]}")
        with archive:
            done_tasks = set()
            for entry in entries:
                if entry.task not in tasks or not plugin.accepts_file(entry.relative):
                    continue
                info = {"size": entry.info.file_size}
                if plugin.is_audio(entry.relative):
                    # Audio is served on its own (with Range requests), so it gets its own object.
                    # Streams in chunks; zipfile stops at the declared size and checks the CRC.
                    with archive.open(entry.info) as source:
                        info["key"] = default_storage.save(
                            _task_file_key(submission, entry.task, entry.relative),
                            File(source, name=entry.relative),
                        )
                else:
                    info["entry"] = entry.path  # transcripts are read from the stored bundle itself
                files[entry.task][entry.relative] = info
                if entry.task not in done_tasks:
                    done_tasks.add(entry.task)
                    if len(done_tasks) % 100 == 0:
                        Submission.objects.filter(pk=submission_id).update(
                            tasks_ingested=len(done_tasks)
                        )
    rows = [
        TaskResult(submission_id=submission_id, task_id=task_pk, files=files[task_id])
        for task_id, task_pk in tasks.items()
    ]
    with transaction.atomic():
        TaskResult.objects.bulk_create(
            rows,
            batch_size=SQL_IN_BATCH,
            update_conflicts=True,
            unique_fields=["submission", "task"],
            update_fields=["files"],
        )
        Submission.objects.filter(pk=submission_id).update(
            tasks_ingested=len(done_tasks), status=Submission.Status.DETECTING
        )
        _enqueue_on_commit("detect_submission", submission_id)
    return True


def _bundle_reader(files: dict, archive: zipfile.ZipFile):
    """size_of/read for one task folder: transcripts from the bundle, audio from storage."""

    def size_of(name: str) -> int | None:
        info = files.get(name)
        return info["size"] if info else None

    def read(name: str) -> bytes:
        info = files[name]
        if "entry" in info:
            return archive.read(info["entry"])
        with default_storage.open(info["key"], "rb") as handle:
            return handle.read()

    return size_of, read


def submission_detect(*, submission_id: int) -> bool:
    if not _claim_stage(submission_id, from_statuses=[], to_status=Submission.Status.DETECTING):
        return False
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    plugin = get_plugin(submission.benchmark.plugin)
    rows = list(submission.task_results.values_list("task_id", "files", "task__should_speak"))
    with submission.bundle.open("rb") as handle, zipfile.ZipFile(handle) as archive:
        evidence = [
            plugin.collect_evidence(*_bundle_reader(files, archive)) for _, files, _ in rows
        ]
    probe = plugin.probe_half_duplex(evidence)
    detected = []
    for (task_pk, files, should_speak), found in zip(rows, evidence, strict=True):
        found = plugin.detect(found, half_duplex=probe.is_half_duplex)
        detected.append(
            TaskResult(
                submission_id=submission_id,
                task_id=task_pk,
                files=files,
                detected=True,
                spoke=found.spoke,
                spoke_via=found.spoke_via or "",
                post_text=found.post_text,
                full_text=found.full_text,
                latency=found.latency,
                input_end=found.input_end,
                turn_taking_correct=found.spoke == should_speak,
            )
        )
    fields = [
        "detected",
        "spoke",
        "spoke_via",
        "post_text",
        "full_text",
        "latency",
        "input_end",
        "turn_taking_correct",
    ]
    with transaction.atomic():
        # An upsert on the natural key: one statement per batch, unlike bulk_update's CASE chains.
        TaskResult.objects.bulk_create(
            detected,
            batch_size=SQL_IN_BATCH,
            update_conflicts=True,
            unique_fields=["submission", "task"],
            update_fields=fields,
        )
        Submission.objects.filter(pk=submission_id).update(
            half_duplex=probe.is_half_duplex, status=Submission.Status.JUDGING
        )
        _enqueue_on_commit("judge_submission", submission_id, submission.judge_id)
    return True


# --- Judging ---------------------------------------------------------------------------------


def judge_identity(*, judge: Judge, kind: str, prompt: PromptVersion) -> str:
    """provider + model + sampling parameters + prompt template version."""
    model = OFFLINE_MODEL if judge.is_offline else judge.models_by_kind[kind]
    endpoint = "" if judge.is_offline else f"@{judge_endpoint(judge)}"
    params = json.dumps(judge.sampling_params(), sort_keys=True, separators=(",", ":"))
    return (
        f"{judge.provider}{endpoint}|{model}|{params}|{kind}@v{prompt.version}:{prompt.sha256[:12]}"
    )


def judgments_prepare(*, submission: Submission, judge: Judge) -> list[int]:
    """Link every (task, kind) to its judgment, creating missing ones. Returns the ids that
    still need a judge call. Byte-identical prompts under the same judge share one judgment."""
    plugin = get_plugin(submission.benchmark.plugin)
    prompts = current_prompts(benchmark=submission.benchmark)
    wanted: dict[tuple[str, str], Judgment] = {}
    links: list[tuple[int, str, tuple[str, str] | None]] = []
    for row in submission.task_results.select_related("task"):
        spec = task_spec(row.task)
        for kind in plugin.kinds_for(spec):
            response = plugin.response_for(kind, full_text=row.full_text, post_text=row.post_text)
            if plugin.skips_judge(kind, response):
                links.append((row.pk, kind, None))
                continue
            prompt_version = prompts[kind]
            prompt = plugin.build_prompt(prompt_version.template, kind, spec, response)
            key = (judge_identity(judge=judge, kind=kind, prompt=prompt_version), _sha256(prompt))
            if key not in wanted:
                judgment = Judgment(
                    judge_identity=key[0],
                    prompt_sha256=key[1],
                    prompt=prompt,
                    kind=kind,
                    provider=judge.provider,
                    model=OFFLINE_MODEL if judge.is_offline else judge.models_by_kind[kind],
                    prompt_version=prompt_version,
                )
                if judge.is_offline:
                    _judge_offline(judgment, plugin, spec, response)
                wanted[key] = judgment
            links.append((row.pk, kind, key))

    Judgment.objects.bulk_create(wanted.values(), batch_size=SQL_IN_BATCH, ignore_conflicts=True)
    ids: dict[tuple[str, str], int] = {}
    needs_call: list[int] = []
    keys = list(wanted)
    for start in range(0, len(keys), SQL_IN_BATCH):
        batch = keys[start : start + SQL_IN_BATCH]
        found = Judgment.objects.filter(
            judge_identity__in={k[0] for k in batch}, prompt_sha256__in={k[1] for k in batch}
        ).values_list("pk", "judge_identity", "prompt_sha256", "status")
        for pk, identity, sha, status in found:
            if (identity, sha) in wanted:
                ids[(identity, sha)] = pk
                if status in (Judgment.Status.PENDING, Judgment.Status.RUNNING):
                    needs_call.append(pk)
    TaskJudgment.objects.bulk_create(
        [
            TaskJudgment(
                task_result_id=row_pk, judge=judge, kind=kind, judgment_id=ids[key] if key else None
            )
            for row_pk, kind, key in links
        ],
        batch_size=SQL_IN_BATCH,
        update_conflicts=True,
        unique_fields=["task_result", "judge", "kind"],
        update_fields=["judgment"],
    )
    return sorted(set(needs_call))


def _judge_offline(judgment: Judgment, plugin, spec, response: str) -> None:
    verdict, reasoning = plugin.offline_verdict(judgment.kind, spec, response)
    key = plugin.VERDICT_KEYS[judgment.kind]
    judgment.raw_output = json.dumps({key: verdict, "reasoning": reasoning})
    judgment.verdict = verdict
    judgment.reasoning = reasoning
    judgment.status = Judgment.Status.DONE
    judgment.attempts = 1
    judgment.latency_ms = 0
    judgment.completed_at = timezone.now()


def judge_endpoint(judge: Judge) -> str:
    """The base URL a judge's calls go to: its own, or the provider's from the settings."""
    if judge.base_url:
        return judge.base_url
    return (
        settings.GEMINI_BASE_URL
        if judge.provider == Judge.Provider.GEMINI
        else settings.OPENAI_BASE_URL
    )


def judge_client(judge: Judge):
    plugin = get_plugin(judge.benchmark.plugin)
    if judge.provider == Judge.Provider.GEMINI:
        return GeminiClient(
            base_url=judge_endpoint(judge),
            api_key=settings.GEMINI_API_KEY,
            timeout=settings.JUDGE_TIMEOUT_SECONDS,
        )
    if judge.provider == Judge.Provider.OPENAI:
        return OpenAICompatibleClient(
            base_url=judge_endpoint(judge),
            api_key=settings.OPENAI_API_KEY,
            timeout=settings.JUDGE_TIMEOUT_SECONDS,
            schema_name=plugin.SCHEMA_NAME,
        )
    raise ValueError(f"judge {judge} makes no calls")


def judge_slots(judge: Judge, client, limit: int) -> EndpointSlots:
    """Calls in flight to this endpoint, across all workers, stay within the judge's limit."""
    broker = settings.CELERY_BROKER_URL
    return EndpointSlots(
        endpoint=f"{judge.provider}:{client.base_url}",
        limit=limit,
        redis_url=broker if broker.startswith(("redis://", "rediss://")) else None,
        # A killed worker's slots come back once a call could no longer be running.
        lease_seconds=settings.JUDGE_TIMEOUT_SECONDS + 5,
    )


def _claim_judgment(judgment_id: int) -> Judgment | None:
    """Take a pending judgment, or one whose worker's lease ran out (that worker died)."""
    now = timezone.now()
    claimed = (
        Judgment.objects.filter(pk=judgment_id)
        .filter(
            Q(status=Judgment.Status.PENDING)
            | Q(status=Judgment.Status.RUNNING, lease_until__lt=now)
        )
        .update(
            status=Judgment.Status.RUNNING,
            lease_until=now + timedelta(seconds=settings.JUDGE_LEASE_SECONDS),
        )
    )
    if not claimed:
        return None
    return Judgment.objects.select_related("prompt_version").get(pk=judgment_id)


@dataclass(frozen=True)
class _CallOutcome:
    reply: JudgeReply | None
    attempts: int
    error: str
    seconds: float


def _call(client, slots: EndpointSlots, judgment: Judgment, params: dict) -> _CallOutcome:
    started = time.monotonic()

    def attempt() -> JudgeReply:
        # One slot per HTTP attempt: backoff sleeps between retries hold none.
        with slots.slot():
            return client.complete(
                model=judgment.model,
                prompt=judgment.prompt,
                schema=judgment.prompt_version.schema,
                params=params,
            )

    try:
        reply, attempts = call_with_retries(
            attempt,
            max_attempts=settings.JUDGE_MAX_ATTEMPTS,
            backoff_base=settings.JUDGE_BACKOFF_BASE_SECONDS,
            backoff_max=settings.JUDGE_BACKOFF_MAX_SECONDS,
        )
        return _CallOutcome(reply, attempts, "", time.monotonic() - started)
    except JudgeError as exc:
        return _CallOutcome(None, settings.JUDGE_MAX_ATTEMPTS, str(exc), time.monotonic() - started)
    except Exception as exc:  # a bug or an unexpected library error: record it, keep the run going
        logger.exception("judge call failed")
        return _CallOutcome(None, 1, f"{type(exc).__name__}: {exc}", time.monotonic() - started)


def _record(judgment: Judgment, outcome: _CallOutcome, plugin) -> None:
    values = {
        "attempts": judgment.attempts + outcome.attempts,
        "latency_ms": int(outcome.seconds * 1000),
        "completed_at": timezone.now(),
        "lease_until": None,
    }
    if outcome.reply is None:
        values.update(status=Judgment.Status.FAILED, error=outcome.error)
    else:
        verdict, reasoning = plugin.parse_verdict(judgment.kind, outcome.reply.raw_output)
        values.update(
            raw_output=outcome.reply.raw_output,
            input_tokens=outcome.reply.input_tokens,
            output_tokens=outcome.reply.output_tokens,
            verdict=verdict,
            reasoning=reasoning,
            # An answer without a boolean verdict is no verdict: failed, and retryable on request.
            status=Judgment.Status.DONE if verdict is not None else Judgment.Status.FAILED,
            error=""
            if verdict is not None
            else f"answer has no boolean '{plugin.VERDICT_KEYS[judgment.kind]}'",
        )
    Judgment.objects.filter(pk=judgment.pk, status=Judgment.Status.RUNNING).update(**values)


def judgments_run(*, judge: Judge, judgment_ids: list[int]) -> None:
    """Call the judge for these judgments, at most `concurrency` at a time. Each result is
    committed as soon as it arrives, so a killed worker repeats only the calls in flight."""
    if not judgment_ids:
        return
    plugin = get_plugin(judge.benchmark.plugin)
    params = judge.sampling_params()
    limit = judge.concurrency or settings.JUDGE_CONCURRENCY
    client = judge_client(judge)
    slots = judge_slots(judge, client, limit)
    remaining = list(reversed(judgment_ids))
    try:
        with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="judge") as pool:
            while remaining:
                in_flight: dict[Future, Judgment] = {}
                waiting: list[int] = []
                while remaining or in_flight:
                    while remaining and len(in_flight) < limit:
                        judgment_id = remaining.pop()
                        judgment = _claim_judgment(judgment_id)
                        if judgment is not None:
                            in_flight[pool.submit(_call, client, slots, judgment, params)] = (
                                judgment
                            )
                        elif Judgment.objects.filter(
                            pk=judgment_id, status=Judgment.Status.RUNNING
                        ).exists():
                            waiting.append(judgment_id)  # another worker holds it; check back
                    if in_flight:
                        finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                        for future in finished:
                            _record(in_flight.pop(future), future.result(), plugin)
                if waiting:
                    # Held by another worker: wait for it to finish or for its lease to lapse.
                    time.sleep(min(5.0, settings.JUDGE_LEASE_SECONDS))
                    remaining = list(reversed(waiting))
    finally:
        client.close()


def submission_judge(*, submission_id: int, judge_id: int) -> Score:
    """Judge every task of a submission under one judge and aggregate. Safe to repeat: cached
    judgments make no call."""
    submission = Submission.objects.select_related("benchmark").get(pk=submission_id)
    judge = Judge.objects.select_related("benchmark").get(pk=judge_id)
    primary = submission.judge_id == judge.pk
    if primary:
        _claim_stage(
            submission_id,
            from_statuses=[
                Submission.Status.DETECTING,
                Submission.Status.SCORED,
                Submission.Status.FAILED,
            ],
            to_status=Submission.Status.JUDGING,
        )
    needs_call = judgments_prepare(submission=submission, judge=judge)
    judgments_run(judge=judge, judgment_ids=needs_call)
    score = submission_aggregate(submission=submission, judge=judge)
    if primary:
        Submission.objects.filter(pk=submission_id).update(
            status=Submission.Status.SCORED, error="", finished_at=timezone.now()
        )
    return score


def submission_aggregate(*, submission: Submission, judge: Judge) -> Score:
    """Recompute the table from stored detections and judgments; never calls a judge."""
    plugin = get_plugin(submission.benchmark.plugin)
    verdicts: dict[int, dict[str, bool | None]] = {}
    total = failed = 0
    links = TaskJudgment.objects.filter(
        task_result__submission=submission, judge=judge
    ).values_list("task_result_id", "kind", "judgment_id", "judgment__verdict", "judgment__status")
    for row_pk, kind, judgment_id, verdict, status in links:
        if judgment_id is None:
            verdicts.setdefault(row_pk, {})[kind] = False  # empty response: false without a call
            continue
        total += 1
        failed += status == Judgment.Status.FAILED
        verdicts.setdefault(row_pk, {})[kind] = verdict if status == Judgment.Status.DONE else None
    outcomes = [
        plugin.TaskOutcome(
            task=task_spec(row.task),
            spoke=row.spoke,
            latency=row.latency,
            verdicts=verdicts.get(row.pk, {}),
        )
        for row in submission.task_results.select_related("task")
    ]
    score, _ = Score.objects.update_or_create(
        submission=submission,
        judge=judge,
        defaults={
            "results": plugin.aggregate(outcomes),
            "judgments_total": total,
            "judgments_failed": failed,
        },
    )
    return score


def judgments_retry_failed(*, submission: Submission, judge: Judge | None = None) -> int:
    """Put this submission's failed judgments back in the queue and re-judge. Returns how many."""
    judge = judge or submission.judge
    failed = TaskJudgment.objects.filter(
        task_result__submission=submission, judge=judge, judgment__status=Judgment.Status.FAILED
    ).values("judgment_id")
    count = Judgment.objects.filter(pk__in=failed, status=Judgment.Status.FAILED).update(
        status=Judgment.Status.PENDING, error="", lease_until=None
    )
    _enqueue_on_commit("judge_submission", submission.pk, judge.pk)
    return count


def submission_rescore(*, submission: Submission, judge: Judge | None = None) -> None:
    """Re-run judging and aggregation in the background. Unchanged prompts hit the cache."""
    _enqueue_on_commit("judge_submission", submission.pk, (judge or submission.judge).pk)
