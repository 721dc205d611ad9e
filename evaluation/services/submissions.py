"""A submission's life, in one place: accepting an upload (validate it once, attach it to its
owner's system, store it and queue it; a rejected upload leaves no row and no file behind), what
its team does with it afterwards (publish, unpublish, anonymity, delete, retry its failed
judgments), and the deletion of its stored files."""

from __future__ import annotations

import contextlib
import json
import logging
import posixpath
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import router, transaction
from django.db.models import F, Q, TextField
from django.db.models.deletion import Collector, ProtectedError
from django.db.models.functions import Cast
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import UploadContents
from evaluation.board_state import board_changed
from evaluation.bundles import (
    BundleRejected,
    ValidationReport,
    audio_members_check,
    manifest_check,
    unpacked_bytes,
    zip_entry_count,
)
from evaluation.links import URL_FIELDS, web_url
from evaluation.models import (
    Benchmark,
    Judge,
    Judgment,
    PendingDeletion,
    Submission,
    System,
    Task,
    TaskJudgment,
    TaskResult,
    Team,
)
from evaluation.run_config import (
    RunConfigInvalid,
    contamination_clean,
    manifest_disclosures,
    run_config_clean,
)
from evaluation.selectors import (
    LimitRefusal,
    account_limit_refusal,
    submission_change_refusal,
    team_limit_refusal,
    upload_limits,
    user_in_submission_team,
)
from evaluation.services.files import file_sha256
from evaluation.services.pipeline import failed_judgments_retry, findings_keep
from evaluation.services.work import enqueue_on_commit
from evaluation.stored import storage_is_s3, storage_unavailable

logger = logging.getLogger(__name__)


class SubmissionInvalid(ValueError):
    """A submission that cannot be made as asked (an unknown row group, no judge)."""


class LimitReached(Exception):
    """A team's or an account's limit refuses the submission; ``refusal`` says which and why."""

    def __init__(self, refusal: LimitRefusal):
        super().__init__(refusal.message)
        self.refusal = refusal


@dataclass(frozen=True)
class StoredBundle:
    """A bundle already in storage under bundles/, put there before any lock is taken, so that
    creating its submission writes rows only. Whoever stored it deletes it if no submission
    takes it (bundle_discard)."""

    name: str
    sha256: str
    size: int


def bundle_suffix(benchmark: Benchmark, filename: str) -> str:
    plugin = get_plugin(benchmark.plugin)
    return next((s for s in plugin.upload.suffixes if str(filename).lower().endswith(s)), "")


def bundle_stored_name(*, sha256: str, suffix: str) -> str:
    """A fresh name under bundles/: random, so two stores of one bundle never meet."""
    return f"bundles/{uuid.uuid4().hex}-{sha256[:16]}{suffix or '.zip'}"


def bundle_store(*, benchmark: Benchmark, path: Path) -> StoredBundle:
    """Copy a local bundle into storage (the API path, where the bundle came in the request)."""
    sha, size = file_sha256(path)
    name = bundle_stored_name(sha256=sha, suffix=bundle_suffix(benchmark, str(path)))
    with open(path, "rb") as handle:
        name = default_storage.save(name, File(handle))
    return StoredBundle(name=name, sha256=sha, size=size)


def bundle_discard(stored: StoredBundle) -> None:
    default_storage.delete(stored.name)


def bundle_discard_quietly(stored: StoredBundle) -> None:
    """bundle_discard for a bundle no submission took: storage that refuses is logged, not
    raised, so that the caller's own outcome stands."""
    try:
        bundle_discard(stored)
    except Exception:
        logger.exception("could not delete the stored bundle %s", stored.name)


class TaskSpecs(Mapping):
    """A benchmark's task specs by task id, as validate_upload receives them: the ids are read
    at once, the specs (megabytes of JSON for some benchmarks) only when one is looked up, so
    checking an upload against the task ids alone does not read them."""

    def __init__(self, benchmark: Benchmark):
        self._tasks = benchmark.tasks.all()
        self._ids = list(self._tasks.values_list("task_id", flat=True))
        self._known = set(self._ids)
        self._specs: dict | None = None

    def __getitem__(self, task_id: str) -> dict:
        if self._specs is None:
            self._specs = dict(self._tasks.values_list("task_id", "spec"))
        return self._specs[task_id]

    def __contains__(self, task_id) -> bool:
        return task_id in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def upload_max_entries(plugin, tasks: int) -> int:
    """The most zip entries an upload of ``tasks`` tasks may hold: what the plug-in says a task
    needs, plus room for a manifest and a few files at the root, within the site's ceiling."""
    return min(plugin.max_entries_per_task * tasks + 64, settings.BUNDLE_MAX_ENTRIES)


def bundle_validate(
    *, benchmark: Benchmark, path: Path, allow_partial: bool, options: dict | None = None
) -> tuple[ValidationReport, UploadContents | None]:
    """(report, contents). Reads the upload once; stores nothing."""
    plugin = get_plugin(benchmark.plugin)
    tasks = TaskSpecs(benchmark)
    # Room for one line per task (an incomplete upload lists every missing task) besides the cap.
    # The report refuses a run holding more timed spans than the plug-in declares, as the
    # plug-in counts them (ValidationReport.count_spans).
    report = ValidationReport(
        max_per_file=settings.REPORT_MAX_PER_FILE,
        max_total=settings.REPORT_MAX_PROBLEMS + len(tasks),
        max_spans_per_run=plugin.max_spans_per_run,
    )
    entries = zip_entry_count(path)
    most = upload_max_entries(plugin, len(tasks))
    if entries is not None and entries > most:
        # Refused from the zip's end records alone: a directory of millions of entries is never
        # read into memory.
        report.add(
            f"the zip holds {entries:,} entries; an upload of {benchmark.name} "
            f"({len(tasks):,} tasks) needs at most {most:,}"
        )
        return report, None
    # Every WAV's header, whatever the plug-in reads; its problems join the plug-in's, so that
    # one report names them all.
    audio_members_check(path, plugin.audio_limits, report)
    options = _options(plugin, options or {}, report)
    contents = plugin.validate_upload(
        Path(path),
        report,
        tasks=tasks,
        allow_partial=allow_partial,
        options=options,
        limits=upload_limits(benchmark),
    )
    contents.options = {**options, **contents.options}
    contents.unpacked_bytes = unpacked_bytes(path) if report.ok else 0
    # The manifest fields that become columns: checked here, where the columns are known.
    manifest_check(
        contents.manifest,
        report,
        choices={"system_type": [group.key for group in plugin.row_groups]},
        max_lengths={"system_type": 50, **MANIFEST_TEXT_FIELDS},
        web_urls=URL_FIELDS,
    )
    try:
        manifest_disclosures(contents.manifest or {})
    except RunConfigInvalid as invalid:
        for problem in invalid.problems:
            report.add(problem, file="manifest.json")
    return report, contents


def _options(plugin, given: dict, report: ValidationReport) -> dict:
    """The upload's declared options, each one of its allowed values (defaults filled in)."""
    chosen = {}
    for option in plugin.upload.options:
        value = str(given.get(option.name) or option.default)
        allowed = [key for key, _ in option.choices]
        if value not in allowed:
            report.add(f"{option.name} must be one of {', '.join(allowed)} (got {value!r})")
            continue
        chosen[option.name] = value
    return chosen


# Manifest fields that describe a system, with the longest text each column holds.
MANIFEST_TEXT_FIELDS = {
    "organization": 200,
    "description": 10_000,
    "asr_model": 200,
    "llm_model": 200,
    "tts_model": 200,
    "parameters": 50,
    "license": 100,
    "paper_url": 200,
    "code_url": 200,
}


def system_facts_from_manifest(manifest: dict) -> dict:
    """What a manifest says about a new system, keeping only well-formed values."""
    facts = {}
    for name, limit in MANIFEST_TEXT_FIELDS.items():
        value = manifest.get(name)
        if isinstance(value, str) and "\x00" not in value:
            facts[name] = value[:limit]
    for name in ("paper_url", "code_url"):
        # Refused at validation; never stored whatever the caller checked.
        if name in facts and not web_url(facts[name]):
            del facts[name]
    if manifest.get("architecture") in System.Architecture.values:
        facts["architecture"] = manifest["architecture"]
    for name in ("open_weights", "full_duplex"):
        if isinstance(manifest.get(name), bool):
            facts[name] = manifest[name]
    if "url" in manifest and "code_url" not in facts and web_url(manifest["url"]):
        facts["code_url"] = manifest["url"][:200]
    return facts


def system_for_submission(*, name: str, team: Team | None, manifest: dict) -> System:
    """The owner's system of that name, created from the manifest the first time. A later
    submission never changes it (its owner edits it); another team's system is never reached."""
    system = System.objects.filter(name=name, team=team).first()
    if system is not None:
        return system
    return System.objects.create(
        name=name, team=team, metadata=manifest, **system_facts_from_manifest(manifest)
    )


def submission_create(
    *,
    benchmark: Benchmark,
    bundle_path: Path,
    system_name: str,
    row_group: str = "",
    judge: Judge | None = None,
    allow_partial: bool = False,
    team: Team | None = None,
    submitted_by=None,
    publish: bool = False,
    idempotency_key: str = "",
    options: dict | None = None,
    validated: UploadContents | None = None,
    run_config: dict | None = None,
    contamination: str | None = None,
    contamination_note: str | None = None,
    stored: StoredBundle | None = None,
) -> Submission:
    """Validate, then store the upload and queue it. A rejected upload raises BundleRejected
    and leaves no row and no file behind. ``validated``: the contents of a successful
    bundle_validate of this same file, so that it is not read twice. The run configuration and
    the contamination disclosure given here replace the manifest's (evaluation/run_config.py);
    a malformed one raises SubmissionInvalid naming every problem. ``stored``: the bundle is
    already in storage (with ``validated``); then only rows are written here, and a failure
    leaves the stored file to the caller."""
    plugin = get_plugin(benchmark.plugin)
    try:
        config = run_config_clean(run_config) if run_config is not None else None
        disclosed = (
            contamination_clean(contamination, contamination_note)
            if contamination is not None or contamination_note is not None
            else None
        )
    except RunConfigInvalid as invalid:
        raise SubmissionInvalid(str(invalid)) from None
    if validated is None:
        report, validated = bundle_validate(
            benchmark=benchmark, path=bundle_path, allow_partial=allow_partial, options=options
        )
        if not report.ok:
            raise BundleRejected(report)
    contents = validated
    from_manifest = manifest_disclosures(contents.manifest or {})
    config = from_manifest[0] if config is None else config
    disclosed = from_manifest[1:] if disclosed is None else disclosed
    groups = [group.key for group in plugin.row_groups]
    if row_group and row_group not in groups:
        raise SubmissionInvalid(
            f"system type must be one of {', '.join(groups)} for {benchmark.name} "
            f"(got {row_group!r})"
        )
    if judge is None:
        judge = benchmark.judges.filter(is_official=True).first()
        if judge is None:
            known = ", ".join(benchmark.judges.values_list("slug", flat=True)) or "none"
            raise SubmissionInvalid(
                f"benchmark {benchmark.slug} has no official judge; choose one of: {known}"
            )
    if stored is not None:
        sha, size = stored.sha256, stored.size
    else:
        sha, size = file_sha256(bundle_path)
    suffix = bundle_suffix(benchmark, str(bundle_path))
    stored_name = None
    submission = None
    try:
        with transaction.atomic():
            system = system_for_submission(name=system_name, team=team, manifest=contents.manifest)
            submission = Submission.objects.create(
                benchmark=benchmark,
                system=system,
                judge=judge,
                manifest=contents.manifest,
                row_group=plugin.group_for(manifest=contents.manifest, declared=row_group),
                options=contents.options,
                run_config=config,
                contamination=disclosed[0],
                contamination_note=disclosed[1],
                is_partial=bool(contents.missing),
                missing_task_count=len(contents.missing),
                bundle_sha256=sha,
                bundle_size=size,
                stored_bytes=size + contents.unpacked_bytes,
                team=team,
                submitted_by=submitted_by,
                is_published=publish,
                published_at=timezone.now() if publish else None,
                idempotency_key=idempotency_key,
            )
            if stored is not None:
                submission.bundle.name = stored.name
            else:
                with open(bundle_path, "rb") as handle:
                    stored_name = default_storage.save(
                        f"bundles/{submission.pk}-{sha[:16]}{suffix or '.zip'}", File(handle)
                    )
                submission.bundle.name = stored_name
            submission.save(update_fields=["bundle"])
            findings_keep(submission, plugin, contents.findings)
            enqueue_on_commit("ingest_submission", submission.pk)
    except BaseException:
        # Rolled back: the stored file goes too. Committed (a stage run at once, inline, that
        # failed): the submission keeps its file, FAILED, and can be retried.
        committed = submission is not None and Submission.objects.filter(pk=submission.pk).exists()
        if stored_name and not committed:
            default_storage.delete(stored_name)
        raise
    return submission


# --- Creating within a team's and an account's limits ---------------------------------------


def submission_create_within_limits(
    *,
    team: Team,
    benchmark: Benchmark,
    bundle_path: Path,
    system_name: str,
    system_type: str,
    judge: Judge | None,
    allow_partial: bool,
    submitted_by,
    publish: bool,
    idempotency_key: str,
    validated=None,
    stored: StoredBundle | None = None,
) -> tuple[Submission, bool]:
    """(submission, created). A submission already made by this team under the same key is
    returned as it is; otherwise the team's limits are checked and the submission created, both
    under the team row lock. Raises LimitReached or BundleRejected.

    The bundle is validated (unless ``validated`` is given) and stored (unless ``stored`` is
    given) before the lock is taken. A bundle stored here is deleted again when no submission
    takes it; a ``stored`` one given by the caller is the caller's to delete."""
    if validated is None:
        report, validated = bundle_validate(
            benchmark=benchmark, path=bundle_path, allow_partial=allow_partial
        )
        if not report.ok:
            raise BundleRejected(report)
    owned = stored is None
    if owned:
        stored = bundle_store(benchmark=benchmark, path=bundle_path)
    try:
        submission, created = _create_counted(
            team=team,
            benchmark=benchmark,
            bundle_path=bundle_path,
            system_name=system_name,
            system_type=system_type,
            judge=judge,
            allow_partial=allow_partial,
            submitted_by=submitted_by,
            publish=publish,
            idempotency_key=idempotency_key,
            validated=validated,
            stored=stored,
        )
    except BaseException:
        if owned:
            bundle_discard_quietly(stored)
        raise
    if owned and not created:
        bundle_discard_quietly(stored)
    return submission, created


def _create_counted(*, team: Team, submitted_by, idempotency_key: str, system_type: str, **create):
    # What it will keep in storage: the bundle and everything it unpacks to.
    adding = create["stored"].size + create["validated"].unpacked_bytes
    with limits_locked(user=submitted_by, team=team):
        if idempotency_key:
            existing = Submission.objects.filter(team=team, idempotency_key=idempotency_key).first()
            if existing is not None:
                return existing, False
        refusal = team_limit_refusal(team=team, adding_bytes=adding) or (
            account_limit_refusal(user=submitted_by, adding_bytes=adding) if submitted_by else None
        )
        if refusal is not None:
            raise LimitReached(refusal)
        submission = submission_create(
            row_group=system_type,
            team=team,
            submitted_by=submitted_by,
            idempotency_key=idempotency_key,
            **create,
        )
        return submission, True


@contextlib.contextmanager
def limits_locked(*, user, team: Team | None) -> Iterator[None]:
    """A transaction holding the submitting account's and the team's row locks: counting a
    limit and writing the rows that count against it happen inside, nothing else."""
    with transaction.atomic():
        _lock(user=user, team=team)
        yield


def _lock(*, user, team: Team | None) -> None:
    """Row locks on the submitting account, then its team (always in this order, so two
    creates never wait on each other crosswise), held until the transaction ends."""
    if user is not None:
        get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
    if team is not None:
        Team.objects.select_for_update().filter(pk=team.pk).values_list("pk").get()


# --- What a team does with its own submissions ----------------------------------------------


def submission_publish(*, submission: Submission, by) -> Submission:
    """Make a team's submission public (its owners and staff). Publishing twice keeps the
    first date."""
    _require_submission_owner(submission, by, "publish")
    Submission.objects.filter(pk=submission.pk, is_published=False).update(
        is_published=True, published_at=timezone.now()
    )
    board_changed(benchmark_id=submission.benchmark_id)
    submission.refresh_from_db()
    return submission


def submission_retry_failed(*, submission: Submission, by, judge: Judge | None = None) -> int:
    """Queue the failed judgments of a scored submission again (team members and staff)."""
    if not (by.is_staff or user_in_submission_team(user=by, submission=submission)):
        raise PermissionDenied("Only members of the submission's team and staff can retry it.")
    if submission.is_reported:
        raise ValidationError("Rows reported in a paper have no judgments to retry.")
    if submission.status != Submission.Status.SCORED:
        raise ValidationError(
            f"The submission is {submission.status}; failed judgments can be retried once it "
            "is scored."
        )
    judge = judge or submission.judge
    if judge is None or not submission.scores.filter(judge=judge).exists():
        raise ValidationError(
            f"Judge {judge.slug if judge else '-'} has not scored this submission."
        )
    return failed_judgments_retry(submission=submission, judge=judge)


def _require_submission_owner(submission: Submission, by, what: str) -> None:
    """What others see of a submission is decided by its team's owners and staff."""
    refusal = submission_change_refusal(user=by, submission=submission, what=what)
    if refusal:
        raise PermissionDenied(refusal)
    if submission.is_reported:
        raise ValidationError(f"Rows reported in a paper are not a team's to {what}.")


def submission_unpublish(*, submission: Submission, by) -> Submission:
    """Back to team-only: the board, exports and charts no longer show it to others."""
    _require_submission_owner(submission, by, "unpublish")
    Submission.objects.filter(pk=submission.pk).update(is_published=False, published_at=None)
    board_changed(benchmark_id=submission.benchmark_id)
    submission.refresh_from_db()
    return submission


def submission_set_anonymous(*, submission: Submission, by, anonymous: bool) -> Submission:
    """Show the submission as "Anonymous (under review)" to everyone outside its team, or
    reveal it (its system, team and links) again."""
    _require_submission_owner(submission, by, "show anonymously or reveal")
    Submission.objects.filter(pk=submission.pk).update(is_anonymous=anonymous)
    board_changed(benchmark_id=submission.benchmark_id)
    submission.refresh_from_db()
    return submission


def submission_delete(*, submission: Submission, by) -> int:
    """Withdraw a team's unpublished, finished submission for good: its rows, its stored files,
    the judgments no other submission uses, and its system when nothing else uses it. Its files
    are marked for deletion with the rows, in one transaction, and deleted once it commits by a
    task retried until storage answers: storage that is down never leaves rows half-deleted or
    files no row marks. Returns how many stored files were marked."""
    _require_submission_owner(submission, by, "delete")
    if submission.is_published:
        raise ValidationError("Unpublish the submission before deleting it.")
    if submission.status not in (Submission.Status.SCORED, Submission.Status.FAILED):
        raise ValidationError(
            f"The submission is still {submission.get_status_display().lower()}; delete it "
            "once it has finished."
        )
    keys = submission_stored_keys(submission=submission)
    board_changed(benchmark_id=submission.benchmark_id)
    used = set(
        TaskJudgment.objects.filter(task_result__submission=submission)
        .exclude(judgment=None)
        .values_list("judgment_id", flat=True)
    )
    system_id = submission.system_id
    try:
        with transaction.atomic():
            submission.delete()
            orphans = Judgment.objects.filter(pk__in=used).exclude(
                pk__in=TaskJudgment.objects.filter(judgment_id__in=used).values("judgment_id")
            )
            orphans.delete()
            system = System.objects.filter(pk=system_id).first()
            if system is not None and not system.submissions.exists():
                system.delete()
            marked = stored_keys_mark_deleted(keys=keys)
    except ProtectedError:
        raise ValidationError(
            "A rating study samples this submission, so it cannot be deleted; ask staff."
        ) from None
    return marked


# --- Stored files ---------------------------------------------------------------------------


def _keys_within(value) -> list[str]:
    """Every stored key a row's JSON names: {"key": "<key>"} wherever it sits (a task's files,
    the derived audio a plug-in's steps stored and recorded in their findings)."""
    if isinstance(value, dict):
        found = [value["key"]] if isinstance(value.get("key"), str) else []
        return found + [key for item in value.values() for key in _keys_within(item)]
    if isinstance(value, list):
        return [key for item in value for key in _keys_within(item)]
    return []


def submission_stored_keys(*, submission: Submission) -> list[str]:
    """Every object stored for the submission: its upload, each task's own files, and what
    its processing steps stored (derived audio a plug-in recorded, say)."""
    keys = [submission.bundle.name] if submission.bundle else []
    for files, detection in submission.task_results.values_list("files", "detection"):
        keys += _keys_within(files or {}) + _keys_within(detection or {})
    return list(dict.fromkeys(keys))


def stored_keys_mark_deleted(*, keys: list[str], queue: bool = True) -> int:
    """Mark objects for deletion, in the caller's transaction (the one deleting their rows);
    the objects go once it commits, by pending_deletions_run (queued unless ``queue`` is off:
    a caller already on a worker runs it itself), retried until storage answers. Returns how
    many were marked."""
    PendingDeletion.objects.bulk_create(
        [PendingDeletion(key=key) for key in dict.fromkeys(keys)], ignore_conflicts=True
    )
    if keys and queue:
        enqueue_on_commit("delete_pending_objects")
    return len(keys)


def _still_referenced(key: str) -> bool:
    """Whether a row still names the object (a content-addressed file shared with another
    submission, a bundle kept by another row): then it stays. Rows of a submission whose
    files were purged (no bundle) name nothing any more."""
    if Submission.objects.filter(bundle=key).exists():
        return True
    quoted = json.dumps(key)
    return (
        TaskResult.objects.exclude(submission__bundle="")
        .annotate(
            files_text=Cast("files", TextField()), detection_text=Cast("detection", TextField())
        )
        .filter(Q(files_text__contains=quoted) | Q(detection_text__contains=quoted))
        .exists()
    )


def pending_deletions_run(*, limit: int = 1000) -> int:
    """Delete objects marked for deletion that no row names any more (those still named are
    unmarked and kept). Storage that does not answer stops the pass: what is left stays marked
    for the next one (beat runs it every DELETION_RETRY_SECONDS). Returns how many went."""
    deleted = 0
    for pending in PendingDeletion.objects.order_by("tried_at", "pk")[:limit]:
        if _still_referenced(pending.key):
            pending.delete()
            continue
        try:
            default_storage.delete(pending.key)
        except FileNotFoundError:
            pass  # already gone
        except Exception as exc:
            PendingDeletion.objects.filter(pk=pending.pk).update(
                attempts=F("attempts") + 1, tried_at=timezone.now()
            )
            if storage_unavailable(exc):
                logger.warning("deleting stored objects: storage did not answer; retried later")
                break
            logger.exception("deleting stored object %s failed; retried later", pending.key)
            continue
        pending.delete()
        deleted += 1
    return deleted


def referenced_keys() -> set[str]:
    """Every stored key a row names: submissions' uploads, their tasks' files and what their
    steps stored (not those of a submission whose files were purged), the benchmarks' task
    assets, open uploads' objects or partial files, and objects marked for deletion (theirs to
    delete)."""
    # At call time: evaluation does not import leaderboard at module level (the arrows of
    # DESIGN.md run the other way); only this sweep needs to know open uploads' objects.
    from leaderboard.uploads.models import Upload
    from leaderboard.uploads.storage import partial_name

    keys = set(Submission.objects.exclude(bundle="").values_list("bundle", flat=True))
    rows = TaskResult.objects.exclude(submission__bundle="").values_list("files", "detection")
    for files, detection in rows.iterator(chunk_size=2000):
        keys.update(_keys_within(files or {}), _keys_within(detection or {}))
    for assets in Task.objects.values_list("assets", flat=True).iterator(chunk_size=2000):
        keys.update(_keys_within(assets or {}))
    open_uploads = Upload.objects.filter(
        status__in=[Upload.Status.UPLOADING, Upload.Status.FINISHING, Upload.Status.VALIDATING]
    )
    keys.update(open_uploads.exclude(s3_key="").values_list("s3_key", flat=True))
    keys.update(
        partial_name(pk)
        for pk in open_uploads.filter(method=Upload.Method.CHUNKED).values_list("pk", flat=True)
    )
    keys.update(PendingDeletion.objects.values_list("key", flat=True))
    return keys


def _stored_objects(storage) -> Iterator[tuple[str, datetime]]:
    """(name, last written) of every object in the storage. S3's listing carries the times
    (one request per thousand objects, where asking each object would be one per object); any
    other storage is walked folder by folder through the Storage API."""
    if storage_is_s3():
        location = (storage.location or "").strip("/")
        prefix = f"{location}/" if location else ""
        pages = storage.bucket.meta.client.get_paginator("list_objects_v2").paginate(
            Bucket=storage.bucket_name, Prefix=prefix
        )
        for page in pages:
            for item in page.get("Contents", []):
                yield item["Key"][len(prefix) :], item["LastModified"]
        return
    folders = [""]
    while folders:
        folder = folders.pop()
        try:
            inner, files = storage.listdir(folder)
        except FileNotFoundError:
            continue  # nothing stored yet, or removed while walked
        folders.extend(posixpath.join(folder, name) for name in inner)
        for name in files:
            path = posixpath.join(folder, name)
            try:
                yield path, storage.get_modified_time(path)
            except FileNotFoundError:
                continue


def unreferenced_objects_sweep(*, older_than: timedelta) -> list[str]:
    """Delete stored objects no row names (see referenced_keys) that were last written longer
    ago than ``older_than`` (a write whose rows are not committed yet is younger): what a
    request or a worker killed mid-store, or an outage mid-delete, left. The whole storage is
    the site's (the bucket's prefix, or the media folder on the filesystem). Returns their
    names."""
    storage = default_storage
    referenced = referenced_keys()
    cutoff = timezone.now() - older_than
    deleted = []
    for name, written in _stored_objects(storage):
        if name in referenced or written >= cutoff:
            continue
        storage.delete(name)
        deleted.append(name)
    if deleted:
        logger.warning("deleted %d stored objects no row named", len(deleted))
    return deleted


FILES_PURGED = (
    "Its files were deleted {days:g} days after it failed (FLOORBOARD_FAILED_FILES_KEEP_DAYS): "
    "upload it again to retry."
)


def failed_files_purge(*, now=None) -> int:
    """Delete the files of submissions that failed more than FAILED_FILES_KEEP_DAYS ago: the
    rows stay (with their error and a note), their bytes no longer count against any quota,
    and they can no longer be retried. Returns how many submissions were purged."""
    days = settings.FAILED_FILES_KEEP_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    stale = Submission.objects.filter(
        status=Submission.Status.FAILED, finished_at__lt=cutoff, is_reported=False
    ).exclude(bundle="", stored_bytes=0)
    purged = 0
    for submission in stale.iterator():
        if _kept_by_others(submission):
            continue
        keys = submission_stored_keys(submission=submission)
        note = FILES_PURGED.format(days=days)
        error = f"{submission.error}\n{note}".strip()
        # Rows first: a submission with no bundle is never resumed, whatever the storage says.
        claimed = Submission.objects.filter(
            pk=submission.pk, status=Submission.Status.FAILED
        ).update(bundle="", stored_bytes=0, error=error)
        if claimed:
            stored_keys_mark_deleted(keys=keys, queue=False)
            purged += 1
    if purged:
        pending_deletions_run()
    return purged


def _kept_by_others(submission: Submission) -> bool:
    """Whether something protects the submission from deletion (a rating study sampling its
    tasks, say): its files then stay, as a team's delete would be refused."""
    collector = Collector(using=router.db_for_write(Submission))
    try:
        collector.collect([submission])
    except ProtectedError:
        return True
    return False


def submission_files_gone(*, submission: Submission) -> bool:
    """Whether the submission's upload was deleted (a failed one, after its keep time)."""
    return not submission.bundle and not submission.is_reported
