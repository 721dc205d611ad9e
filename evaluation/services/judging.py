"""Judging: which judgments a submission needs (shared by identical requests: the cache), and
the calls that settle them.

A judgment is claimed with a lease that a heartbeat renews while its worker lives; a worker that
dies lets its leases lapse and another takes the judgments up. A stored answer is never asked
for again.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import BenchmarkPlugin, JudgmentRequest, TaskInput
from evaluation.bulk import (
    insert_statement,
    instance_values,
    rows_insert,
    statements_run,
    update_statements,
)
from evaluation.judge_endpoints import endpoint_api_key, endpoint_refusal
from evaluation.judges import (
    AnthropicClient,
    EndpointRefused,
    GeminiClient,
    JudgeError,
    JudgeReply,
    OpenAICompatibleClient,
    RefusedClient,
    call_with_retries,
)
from evaluation.models import (
    Judge,
    JudgeCharge,
    Judgment,
    PromptVersion,
    Submission,
    TaskJudgment,
    TaskResult,
)
from evaluation.selectors import (
    OPEN,
    claimable,
    claimable_ids,
    current_prompts,
    hook_facts,
    judgments_open,
    linked_judgments,
    submission_links,
)
from evaluation.services.files import TASK_INPUT_COLUMNS, open_upload, task_input
from evaluation.services.spending import (
    call_group_add,
    call_groups,
    charge_for,
    spend_room,
    spend_stop,
)
from evaluation.services.work import heartbeat
from evaluation.throttle import EndpointSlots

logger = logging.getLogger(__name__)

OFFLINE_MODEL = "offline-heuristic-v1"
# The longest the judging loop waits for an answer before it looks at its other work (it
# wakes at once when one comes, and stores it then).
ANSWER_WAIT_SECONDS = 0.25
# A calling thread waiting for room (see judgments_work) looks this often whether it should stop.
ROOM_WAIT_SECONDS = 0.1
# What the offline judge writes on a judgment.
OFFLINE_FIELDS = (
    "raw_output",
    "output",
    "verdict",
    "reasoning",
    "error",
    "status",
    "attempts",
    "latency_ms",
    "completed_at",
)
SQL_IN_BATCH = 500
# Judgments a worker may hold leased from their creation, waiting for a call (see Lease): their
# prompts are in its memory meanwhile.
LEASE_AHEAD = 256
# A worker with nothing left to call while another worker holds some of its judgments looks
# again after HELD_WAIT_FIRST, then after twice as long each time, up to HELD_WAIT_MAX: the
# other worker's last answers are seen within a fraction of a second when the judge is fast,
# and a slow judge is not asked about every 50 ms.
HELD_WAIT_FIRST, HELD_WAIT_MAX = 0.05, 1.0
# What a new judgment is created with (the rest takes the fields' defaults).
JUDGMENT_COLUMNS = (
    "judge_identity",
    "prompt_sha256",
    "prompt",
    "system_prompt",
    "context",
    "kind",
    "provider",
    "model",
    "prompt_version_id",
    *OFFLINE_FIELDS,
    "lease_owner",
    "lease_until",
)


@dataclass
class Lease:
    """Judgments that linking creates already leased to the worker that will call them, so
    that it calls them without claiming them first (see judgments_work): at most ``room`` per
    linked chunk, which that worker sets before each chunk so that it holds at most
    LEASE_AHEAD judgments (or four rounds of its judge's concurrency, when more) waiting for
    a call. The rest are left to claims, by it or by the workers that join it."""

    owner: str
    room: int = 0


@dataclass
class LinkedChunk:
    """What linking one chunk of tasks left to call: the ids of judgments still open, to
    claim, and the judgments it created leased (Lease), with their prompt versions, ready to
    call."""

    open_ids: list[int]
    leased: list[Judgment] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.open_ids) + len(self.leased)


def request_sha256(request: JudgmentRequest) -> str:
    """The cache key's half that names the request: the user message, and the system message
    when there is one."""
    text = request.prompt if not request.system else f"{request.system}\x00{request.prompt}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_endpoint(judge: Judge) -> str:
    """The base URL a judge's calls go to: its own, or the provider's from the settings."""
    if judge.base_url:
        return judge.base_url
    if judge.provider == Judge.Provider.GEMINI:
        return settings.GEMINI_BASE_URL
    if judge.provider == Judge.Provider.ANTHROPIC:
        return settings.ANTHROPIC_BASE_URL
    return settings.OPENAI_BASE_URL


def judge_model(judge: Judge, kind: str) -> str:
    return OFFLINE_MODEL if judge.is_offline else judge.models_by_kind[kind]


def judge_identity(*, judge: Judge, kind: str, prompt: PromptVersion) -> str:
    """provider@endpoint + model + sampling parameters + prompt template version."""
    endpoint = "" if judge.is_offline else f"@{judge_endpoint(judge)}"
    params = json.dumps(judge.sampling_params(), sort_keys=True, separators=(",", ":"))
    return (
        f"{judge.provider}{endpoint}|{judge_model(judge, kind)}|{params}|"
        f"{kind}@v{prompt.version}:{prompt.sha256[:12]}"
    )


def judge_client(judge: Judge):
    """The client of a judge's endpoint, with the API key named for its host (none for a host
    named for no key). An endpoint the site does not allow (JUDGE_HOSTS, as it is now: it may
    have changed since the judge was added) gets a client whose every call fails unsent."""
    kind = {
        Judge.Provider.GEMINI: GeminiClient,
        Judge.Provider.ANTHROPIC: AnthropicClient,
        Judge.Provider.OPENAI: OpenAICompatibleClient,
    }.get(judge.provider)
    if kind is None:
        raise ValueError(f"judge {judge} makes no calls")
    endpoint = judge_endpoint(judge)
    refusal = endpoint_refusal(endpoint)
    if refusal is not None:
        return RefusedClient(base_url=endpoint, reason=f"Not called: {refusal}")
    return kind(
        base_url=endpoint,
        api_key=endpoint_api_key(endpoint),
        timeout=settings.JUDGE_TIMEOUT_SECONDS,
    )


def judge_slots(judge: Judge, client, limit: int) -> EndpointSlots:
    """Calls in flight to this endpoint, across all workers, stay within the judge's limit. A
    calling thread keeps its slot for its next call; judgments_work gives kept slots back once
    it has no call left to start."""
    broker = settings.CELERY_BROKER_URL
    return EndpointSlots(
        endpoint=f"{judge.provider}:{client.base_url}",
        limit=limit,
        redis_url=broker if broker.startswith(("redis://", "rediss://")) else None,
        # Renewed while the call lasts: a killed worker's slots come back one lease later.
        lease_seconds=settings.JUDGE_LEASE_SECONDS,
        keep=True,
    )


# --- Preparing ------------------------------------------------------------------------------


# Tasks whose judgment requests (prompts and all) are held at once while linking.
PREPARE_CHUNK = 200
# Tasks linked first, alone: their calls start while the rest is linked.
FIRST_CHUNK = 16


def _chunks(submission: Submission, plugin, prompts, facts, first: int = 0) -> Iterator[list]:
    """Every task's judgment requests, a chunk of tasks at a time: [(task result id, task
    input, requests)] per chunk, so only a chunk's prompts are in memory. With ``first``, the
    first chunk holds that many tasks (the calls of a small one start sooner). The task
    results' ids are read in order first, then the columns their inputs need, one statement
    per chunk."""
    order = list(submission.task_results.order_by("task__task_id").values_list("pk", flat=True))
    task_results = TaskResult.objects.select_related("task").only(*TASK_INPUT_COLUMNS)
    with open_upload(submission) as archive:
        start = 0
        while start < len(order):
            end = start + (min(first, PREPARE_CHUNK) if first and not start else PREPARE_CHUNK)
            # Read a chunk at a time: the first chunk's calls need not wait for every row.
            held = task_results.in_bulk(order[start:end])
            chunk = []
            for row in (held[pk] for pk in order[start:end] if pk in held):
                task = task_input(row, archive)
                chunk.append(
                    (row.pk, task, plugin.judgment_requests(task, prompts=prompts, facts=facts))
                )
            yield chunk
            start = end


def _keyed_chunks(submission: Submission, judge: Judge, plugin, prompts) -> Iterator:
    """Every task's judgment requests with their cache keys (None for a fixed one), a chunk
    at a time (_chunks, the first FIRST_CHUNK tasks alone): [(task result id, task input,
    [(request, key)])] per chunk."""
    identities: dict[str, str] = {}
    scope = judgment_scope(submission)
    chunks = _chunks(submission, plugin, prompts, hook_facts(submission), first=FIRST_CHUNK)
    for chunk in chunks:
        yield [
            (
                row_pk,
                task,
                [
                    (
                        request,
                        None
                        if request.fixed is not None
                        else _key(judge, prompts, request, identities, scope),
                    )
                    for request in requests
                ],
            )
            for row_pk, task, requests in chunk
        ]


@dataclass
class JudgingPlan:
    """What linking will leave to call, read before anything is written. ``groups``: the calls
    a worker may start (new, pending, or whose worker's lease lapsed) by kind and prompt
    version, with their messages' lengths, as the spending estimate counts them; ``open_count``:
    every judgment still unsettled (those another worker is calling included); ``chunks``:
    every request with its cache key (_keyed_chunks), built once here and linked from here
    (judgments_link), so that a submission's requests are held from the plan until linked
    (its benchmark's tasks bound them). A plan is made for a judge that calls: its task inputs
    were read with the upload open, and linking reads them again only to answer offline."""

    groups: list[dict]
    open_count: int
    chunks: list[list] = field(default_factory=list, repr=False)


def judgments_plan(*, submission: Submission, judge: Judge) -> JudgingPlan:
    """The calls linking this submission's judged slots would leave (see JudgingPlan), found
    by building every request and looking its cache key up, without writing anything."""

    plugin = get_plugin(submission.benchmark.plugin)
    prompts = current_prompts(benchmark=submission.benchmark)
    seen: set[tuple[str, str]] = set()
    groups: dict[tuple[str, int], dict] = {}
    open_count = 0
    now = timezone.now()
    chunks = list(_keyed_chunks(submission, judge, plugin, prompts))
    for chunk in chunks:
        lengths: dict[tuple[str, str], tuple[str, int, int]] = {}
        for _, _, requests in chunk:
            for request, key in requests:
                if key is not None and key not in seen:
                    seen.add(key)
                    lengths[key] = (request.kind, len(request.prompt), len(request.system))
        stored = _stored(lengths)
        for key, (kind, user, system) in lengths.items():
            _, status, lease_until = stored.get(key, (None, Judgment.Status.PENDING, None))
            if status not in OPEN:
                continue
            open_count += 1
            if status == Judgment.Status.RUNNING and (lease_until is None or lease_until >= now):
                continue  # another worker is calling it
            call_group_add(
                groups,
                kind=kind,
                prompt_version_id=prompts[kind].pk,
                n=1,
                user=user,
                system=system,
            )
    return JudgingPlan(call_groups(groups), open_count, chunks)


def _plan_chunks(plan: JudgingPlan) -> Iterator[list]:
    """A plan's chunks, each dropped from it as it is taken: only the chunks not linked yet
    are held."""
    while plan.chunks:
        yield plan.chunks.pop(0)


def judgments_link(
    *,
    submission: Submission,
    judge: Judge,
    lease: Lease | None = None,
    plan: JudgingPlan | None = None,
) -> Iterator[LinkedChunk]:
    """Link every judged slot of every task to its judgment, creating the missing ones (the
    offline judge answers at once). Byte-identical requests under the same judge share one
    judgment within the submission's scope (judgment_scope). Tasks are taken a chunk at a
    time, each chunk's judgments and links committed before the next is linked: yields, after
    each, what of it still needs a call, so that calls can start while the rest is linked.
    Slots a changed rule no longer asks for are dropped once every chunk is linked. ``lease``:
    new judgments are created leased to the worker whose judgments_work takes the chunks (it
    alone may consume them). ``plan``: this judging's plan, whose requests are linked (else
    they are built here, a chunk at a time)."""

    plugin = get_plugin(submission.benchmark.plugin)
    prompts = current_prompts(benchmark=submission.benchmark)
    ids: dict[tuple[str, str], int] = {}
    wanted_slots: set[tuple[int, str, str]] = set()
    for chunk in _plan_chunks(plan) if plan else _keyed_chunks(submission, judge, plugin, prompts):
        wanted: dict[tuple[str, str], tuple[JudgmentRequest, TaskInput]] = {}
        links: list[tuple[int, JudgmentRequest, tuple[str, str] | None]] = []
        for row_pk, task, requests in chunk:
            for request, key in requests:
                if key is not None and key not in ids and key not in wanted:
                    wanted[key] = (request, task)
                # The prompt is on its judgment: a link keeps only what it stores.
                links.append((row_pk, _slot(request), key))
                wanted_slots.add((row_pk, request.kind, request.slot))
        with transaction.atomic():
            opened = _judgments_store(judge, plugin, prompts, wanted, ids, lease)
            _links_store(judge, links, ids)
        yield opened
    # A slot is one link (its unique key): only more links than slots asked for leaves stale
    # ones to look for (linked before, by a rule that asked for more).
    linked = list(submission_links(submission_id=submission.pk, judge_id=judge.pk))
    if sum(links.count() for links in linked) == len(wanted_slots):
        return
    stale = [
        pk
        for links in linked
        for pk, row_pk, kind, slot in links.values_list("pk", "task_result_id", "kind", "slot")
        if (row_pk, kind, slot) not in wanted_slots
    ]
    TaskJudgment.objects.filter(pk__in=stale).delete()


def judgments_prepare(*, submission: Submission, judge: Judge) -> int:
    """Link every judged slot at once (judgments_link); returns how many judgments still need
    a call."""
    return sum(len(opened) for opened in judgments_link(submission=submission, judge=judge))


def _links_store(judge: Judge, links: list, ids: dict) -> None:
    now = timezone.now()
    rows_insert(
        TaskJudgment,
        (
            "task_result_id",
            "judge_id",
            "kind",
            "slot",
            "label",
            "judgment_id",
            "fixed",
            "linked_at",
        ),
        (
            (
                row_pk,
                judge.pk,
                request.kind,
                request.slot,
                request.label[:200],
                ids[key] if key else None,
                request.fixed,
                now,
            )
            for row_pk, request, key in links
        ),
        unique=("task_result", "judge", "kind", "slot"),
        update=("judgment", "fixed", "label", "linked_at"),
    )


def _slot(request: JudgmentRequest) -> JudgmentRequest:
    return dataclasses.replace(request, prompt="", system="", context={})


def judgment_scope(submission: Submission) -> str:
    """Whose submissions share a judgment of a byte-identical request: one team's (a re-score
    and a re-submission stay free), or those made without a team (from the command line).
    Another team's identical request is asked again, so that nothing a team sees of its own
    judging — the estimate, the charges, how soon verdicts come — tells it what another team
    sent."""
    return "" if submission.team_id is None else f"team:{submission.team_id}"


def _key(
    judge: Judge, prompts, request: JudgmentRequest, identities: dict, scope: str
) -> tuple[str, str]:
    """A request's cache key: (judge identity within the scope, request hash). ``identities``:
    the judge's identity by kind, as far as made (one per kind, not one per request);
    ``scope``: judgment_scope of the submission."""
    identity = identities.get(request.kind)
    if identity is None:
        identity = judge_identity(judge=judge, kind=request.kind, prompt=prompts[request.kind])
        identity = identities[request.kind] = f"{identity}|{scope}" if scope else identity
    return identity, request_sha256(request)


def _new_judgment(judge, plugin, prompts, key, request, task) -> Judgment:
    """A judgment for a request under its cache key, answered at once by the offline judge."""
    judgment = Judgment(
        judge_identity=key[0],
        prompt_sha256=key[1],
        prompt=request.prompt,
        system_prompt=request.system,
        context=request.context,
        kind=request.kind,
        provider=judge.provider,
        model=judge_model(judge, request.kind),
        prompt_version_id=prompts[request.kind].pk,
    )
    if judge.is_offline:
        _answer_offline(judgment, plugin, request, task)
    return judgment


def _stored(keys) -> dict[tuple[str, str], tuple[int, str, object]]:
    """(id, status, lease end) of the stored judgments among these cache keys."""
    keys = set(keys)
    found = {}
    ordered = list(keys)
    for start in range(0, len(ordered), SQL_IN_BATCH):
        batch = ordered[start : start + SQL_IN_BATCH]
        rows = Judgment.objects.filter(
            judge_identity__in={k[0] for k in batch}, prompt_sha256__in={k[1] for k in batch}
        ).values_list("pk", "judge_identity", "prompt_sha256", "status", "lease_until")
        for pk, identity, sha, status, lease_until in rows:
            if (identity, sha) in keys:
                found[(identity, sha)] = (pk, status, lease_until)
    return found


def _judgments_store(
    judge: Judge, plugin, prompts, wanted: dict, ids: dict, lease: Lease | None = None
) -> LinkedChunk:
    """Create the wanted judgments that are not stored yet (another submission may have asked
    the same; only new ones are answered by the offline judge) and add every wanted key's id
    to ``ids``. Returns what still needs a call: up to ``lease.room`` of the new ones created
    leased to ``lease.owner`` (where the database returns the rows it writes, so that their
    ids are known), the ids of the rest."""
    found = _stored(wanted)
    made = {
        key: _new_judgment(judge, plugin, prompts, key, *wanted[key])
        for key in wanted
        if key not in found
    }
    leasing: dict[tuple[str, str], Judgment] = {}
    returns_rows = connection.features.can_return_rows_from_bulk_insert
    if lease is not None and not judge.is_offline and returns_rows:
        until = timezone.now() + timedelta(seconds=settings.JUDGE_LEASE_SECONDS)
        for key in list(made)[: max(0, lease.room)]:
            judgment = leasing[key] = made[key]
            judgment.status = Judgment.Status.RUNNING
            judgment.lease_owner, judgment.lease_until = lease.owner, until
    leased = []
    if made:
        written = rows_insert(
            Judgment,
            JUDGMENT_COLUMNS,
            (instance_values(judgment, JUDGMENT_COLUMNS) for judgment in made.values()),
            unique=("judge_identity", "prompt_sha256"),
            returning=("id", "judge_identity", "prompt_sha256", "status"),
        )
        # One another worker stored first is not returned: it is read, as every one is where
        # the database returns none.
        for pk, identity, sha, status in written or ():
            judgment = leasing.get((identity, sha))
            if judgment is not None:
                judgment.pk = pk
                judgment.prompt_version = prompts[judgment.kind]
                # As a claim reads it back: JSON, not the request's own objects.
                judgment.context = json.loads(json.dumps(judgment.context))
                leased.append(judgment)
                ids[(identity, sha)] = pk
            else:
                found[(identity, sha)] = (pk, status, None)
        # (Those leased are in ids already.)
        found.update(_stored(key for key in made if key not in found and key not in ids))
    opened = []
    for key, (pk, status, _) in found.items():
        ids[key] = pk
        unsettled = status in OPEN
        if judge.is_offline and (unsettled or status == Judgment.Status.FAILED):
            # Stored earlier and put back to pending (a retry): the offline judge answers it
            # here, as it answered the new ones.
            answered = made.get(key) or _new_judgment(judge, plugin, prompts, key, *wanted[key])
            Judgment.objects.filter(pk=pk).update(
                **{field: getattr(answered, field) for field in OFFLINE_FIELDS},
                lease_owner="",
                lease_until=None,
            )
            continue
        if unsettled:
            opened.append(pk)
    return LinkedChunk(opened, leased)


def _answer_offline(judgment: Judgment, plugin: BenchmarkPlugin, request, task) -> None:
    raw = plugin.offline_output(request, task)
    parsed = plugin.parse_output(request.kind, raw, context=request.context)
    judgment.raw_output = raw
    judgment.output = parsed.output
    judgment.verdict = parsed.verdict
    judgment.reasoning = parsed.reasoning
    judgment.error = parsed.error
    judgment.status = Judgment.Status.DONE if parsed.output is not None else Judgment.Status.FAILED
    judgment.attempts = 1
    judgment.latency_ms = 0
    judgment.completed_at = timezone.now()


# --- Calling --------------------------------------------------------------------------------


def judgments_claim(
    *,
    submission_id: int,
    judge_id: int,
    owner: str,
    limit: int,
    todo: deque,
    versions: dict | None = None,
    read: bool = True,
) -> list:
    """Take up to ``limit`` of this submission's judgments that are pending, or whose worker's
    lease lapsed (that worker died), each with its prompt version; ``versions`` keeps the
    prompt versions read so far (by id) across claims: read once, not once per judgment.

    ``todo`` holds the ids this worker still means to try, read with claimable_ids when it runs
    out: a claim takes them by primary key instead of searching the submission's judgments
    again, and skips those another worker took meanwhile. [] once a fresh read finds none, or,
    with ``read`` False (the caller fills ``todo`` itself), once ``todo`` is empty."""
    while True:
        if not todo:
            if not read:
                return []
            todo.extend(claimable_ids(submission_id=submission_id, judge_id=judge_id))
            read = False
        claimed = _claim([todo.popleft() for _ in range(min(limit, len(todo)))], owner, versions)
        if claimed:
            return claimed


def _claim(candidates: list[int], owner: str, versions: dict | None) -> list:
    """Lease those of ``candidates`` still claimable to ``owner``; returns the ones it got.
    One statement leases them and reads them back (UPDATE ... RETURNING, which PostgreSQL and
    SQLite both speak): a worker answering a fast judge claims every few milliseconds."""
    if not candidates:
        return []
    now = timezone.now()
    # The ORM's own condition: candidates still claimable.
    query = Judgment.objects.filter(pk__in=candidates).filter(claimable(now)).query
    where, where_params = query.get_compiler(connection=connection).compile(query.where)
    quote, meta = connection.ops.quote_name, Judgment._meta
    sql = (
        f"UPDATE {quote(meta.db_table)} SET "
        + ", ".join(
            f"{quote(meta.get_field(name).column)} = %s"
            for name in ("status", "lease_owner", "lease_until")
        )
        + f" WHERE {where} RETURNING "
        + ", ".join(quote(field.column) for field in meta.concrete_fields)
    )
    until = now + timedelta(seconds=settings.JUDGE_LEASE_SECONDS)
    params = [
        Judgment.Status.RUNNING,
        owner,
        connection.ops.adapt_datetimefield_value(until),
        *where_params,
    ]
    with transaction.atomic():  # every returned row read before the statement commits
        claimed = sorted(Judgment.objects.raw(sql, params), key=lambda judgment: judgment.pk)
    versions = {} if versions is None else versions
    unread = {j.prompt_version_id for j in claimed} - versions.keys() - {None}
    if unread:
        versions.update(PromptVersion.objects.in_bulk(unread))
    for judgment in claimed:
        judgment.prompt_version = versions.get(judgment.prompt_version_id)
    return claimed


def leases_renew(*, owner: str) -> None:
    """Keep a live worker's judgments: called by its heartbeat."""
    Judgment.objects.filter(lease_owner=owner, status=Judgment.Status.RUNNING).update(
        lease_until=timezone.now() + timedelta(seconds=settings.JUDGE_LEASE_SECONDS)
    )


@dataclass
class _CallOutcome:
    reply: JudgeReply | None
    attempts: int
    error: str
    seconds: float
    parsed: object = None
    earlier: list = field(default_factory=list)
    # Every answered attempt's reply (what the calls cost).
    replies: list = field(default_factory=list)


def _call(client, slots: EndpointSlots, judgment: Judgment, params: dict, plugin) -> _CallOutcome:
    """Transport failures are retried with backoff; an answer that does not parse is asked for
    again as many times as the kind allows (the first parseable answer decides)."""
    kind = plugin.judge_kind(judgment.kind)
    started = time.monotonic()
    attempts, earlier, replies = 0, [], []

    def attempt() -> JudgeReply:
        # One slot per HTTP attempt: backoff sleeps between retries hold none.
        with slots.slot():
            return client.complete(
                model=judgment.model,
                prompt=judgment.prompt,
                system=judgment.system_prompt,
                response_format=kind.response_format,
                schema=judgment.prompt_version.schema,
                schema_name=kind.schema_name,
                params=params,
            )

    try:
        for answered in range(1, max(1, kind.answer_attempts) + 1):
            reply, made = call_with_retries(
                attempt,
                max_attempts=settings.JUDGE_MAX_ATTEMPTS,
                backoff_base=settings.JUDGE_BACKOFF_BASE_SECONDS,
                backoff_max=settings.JUDGE_BACKOFF_MAX_SECONDS,
            )
            attempts += made
            replies.append(reply)
            parsed = plugin.parse_output(judgment.kind, reply.raw_output, context=judgment.context)
            if parsed.output is not None or answered == max(1, kind.answer_attempts):
                return _CallOutcome(
                    reply, attempts, "", time.monotonic() - started, parsed, earlier, replies
                )
            earlier.append(reply.raw_output)
    except EndpointRefused as exc:
        return _CallOutcome(None, attempts, str(exc), time.monotonic() - started, replies=replies)
    except JudgeError as exc:
        return _CallOutcome(
            None,
            attempts + settings.JUDGE_MAX_ATTEMPTS,
            str(exc),
            time.monotonic() - started,
            replies=replies,
        )
    except Exception as exc:  # a bug or an unexpected library error: record it, keep the run going
        logger.exception("judge call failed")
        return _CallOutcome(
            None,
            attempts + 1,
            f"{type(exc).__name__}: {exc}",
            time.monotonic() - started,
            replies=replies,
        )
    raise AssertionError("unreachable")


def _tokens(replies: list, field: str) -> int | None:
    """A judgment's tokens over all its answered attempts; None when the provider reported none."""
    reported = [getattr(reply, field) for reply in replies if getattr(reply, field) is not None]
    return sum(reported) if reported else None


# What a call's outcome sets on its judgment (a failed call leaves the answer's fields as
# they were).
SETTLED_FIELDS = (
    "attempts",
    "latency_ms",
    "completed_at",
    "lease_until",
    "lease_owner",
    "earlier_outputs",
    "status",
    "error",
    "raw_output",
    "input_tokens",
    "output_tokens",
    "output",
    "verdict",
    "reasoning",
)


def _settle(judgment: Judgment, outcome: _CallOutcome, plugin) -> None:
    """Put a call's outcome on its judgment, in memory."""
    judgment.attempts += outcome.attempts
    judgment.latency_ms = int(outcome.seconds * 1000)
    judgment.completed_at = timezone.now()
    judgment.lease_until, judgment.lease_owner = None, ""
    judgment.earlier_outputs = outcome.earlier
    if outcome.reply is None:
        judgment.status, judgment.error = Judgment.Status.FAILED, outcome.error
        return
    parsed = outcome.parsed
    kind = plugin.judge_kind(judgment.kind)
    # An unparseable answer is no verdict (failed, retryable on request), unless the kind
    # scores it as an outcome (not met, say).
    settled = parsed.output is not None or kind.unparseable == "outcome"
    judgment.raw_output = outcome.reply.raw_output
    judgment.input_tokens = _tokens(outcome.replies, "input_tokens")
    judgment.output_tokens = _tokens(outcome.replies, "output_tokens")
    judgment.output = parsed.output
    judgment.verdict = parsed.verdict
    judgment.reasoning = parsed.reasoning
    judgment.status = Judgment.Status.DONE if settled else Judgment.Status.FAILED
    judgment.error = parsed.error


CHARGE_COLUMNS = (
    "submission_id",
    "team_id",
    "judge_id",
    "judgment_id",
    "calls",
    "input_tokens",
    "output_tokens",
    "estimated",
    "cost_usd",
    "charged_at",
)


def _record_all(answered: list, plugin, charge=None) -> int:
    """Store the answers gathered so far, and what their calls cost, all or none in one round
    trip (statements_run); returns how many. A row is written only while the lease owner that
    called it still holds it (another worker may have taken it over); the call is paid for
    either way. ``charge(judgment, outcome)``: the JudgeCharge of one answer, or None.

    Each answer is settled on a copy of its judgment: one whose store fails (a database error)
    keeps its judgment as claimed, owner included, for the next try (the loop's close) to
    store, rather than leaving it RUNNING under no owner to be put back and asked again."""
    if not answered:
        return 0
    settled, charges = [], []
    for judgment, outcome in answered:
        if charge is not None:
            charges.append(charge(judgment, outcome))
        answer = copy.copy(judgment)
        _settle(answer, outcome, plugin)
        settled.append(
            [
                *instance_values(answer, SETTLED_FIELDS),
                judgment.pk,
                Judgment.Status.RUNNING,
                judgment.lease_owner,
            ]
        )
    statements_run(
        [
            *update_statements(Judgment, SETTLED_FIELDS, ("id", "status", "lease_owner"), settled),
            insert_statement(
                JudgeCharge,
                CHARGE_COLUMNS,
                [instance_values(c, CHARGE_COLUMNS) for c in charges if c is not None],
            ),
        ]
    )
    stored = len(answered)
    answered.clear()
    return stored


def judgments_work(
    *,
    submission_id: int,
    judge_id: int,
    deadline: float,
    link: Iterator[LinkedChunk] | None = None,
    lease: Lease | None = None,
    on_linked: Callable[[], None] | None = None,
) -> bool:
    """Call the judge for this submission's open judgments, at most the judge's concurrency at
    a time, until none is left to take or the deadline passes. Returns True when every judgment
    of the submission is settled (see JudgingLoop for how).

    With ``link`` (judgments_link, not started), the slots are linked here a chunk at a time
    while the calls of the chunks before run; linking always finishes, past the deadline too,
    and ``on_linked`` runs once it has. ``lease``: the one ``link`` was made with; the
    judgments it creates leased to this worker are called without a claim."""
    judge = Judge.objects.select_related("benchmark").get(pk=judge_id)
    if judge.is_offline:
        return not judgments_open(submission_id=submission_id, judge_id=judge_id)
    loop = JudgingLoop(
        judge=judge,
        submission_id=submission_id,
        deadline=deadline,
        link=link,
        lease=lease,
        on_linked=on_linked,
    )
    try:
        with heartbeat(submission_id, renew=loop.leases_renew):
            return loop.run()
    finally:
        loop.close()


class JudgingLoop:
    """One worker's judging of one submission under one judge (judgments_work).

    Its main thread repeats a few named steps until nothing is left: start calls, claim,
    link the next chunk, collect the answers that came and store them, and, when another
    worker holds what is left, wait for it. The calls run on up to ``limit`` calling threads,
    each taking the next judgment from ``ready`` the moment its call ends, without waiting for
    the main thread (which may be linking, claiming or storing meanwhile).

    Answers are stored as they come, and a calling thread starts a call only while fewer than
    the concurrency are asked and not yet stored (``room``): a worker killed at any moment
    leaves at most that many calls to be asked again. The endpoint's slots (judge_slots) hold
    the calls in flight within the judge's concurrency across workers.

    The charges are bounded as they are stored (spending.spend_room): once they pass the room
    left, no call starts any more, the calls under way finish, the estimate is held with the
    figures (spend_stop) and run returns False (linking still finishes)."""

    def __init__(
        self,
        *,
        judge: Judge,
        submission_id: int,
        deadline: float,
        link: Iterator[LinkedChunk] | None = None,
        lease: Lease | None = None,
        on_linked: Callable[[], None] | None = None,
    ) -> None:
        self.judge, self.submission_id, self.deadline = judge, submission_id, deadline
        self.link, self.lease, self.on_linked = link, lease, on_linked
        self.plugin = get_plugin(judge.benchmark.plugin)
        self.params = judge.sampling_params()
        self.limit = judge.concurrency or settings.JUDGE_CONCURRENCY
        self.owner = lease.owner if lease is not None else uuid.uuid4().hex
        self.client = judge_client(judge)
        self.slots = judge_slots(judge, self.client, self.limit)
        self.team_id = (
            Submission.objects.filter(pk=submission_id).values_list("team_id", flat=True).first()
        )
        # What this judging may still be charged, as last read, and what this worker's calls
        # were charged since; the reason it stopped, once it has.
        self.spend = spend_room(submission_id=submission_id, judge_id=judge.pk)
        self.charged_since_read = Decimal(0)
        self.halted = ""

        # Claimed (or created leased by linking) and not yet taken by a calling thread.
        self.ready: deque[Judgment] = deque()
        self.results: queue.SimpleQueue = queue.SimpleQueue()  # (judgment, outcome)
        self.answered: list = []  # received and not yet stored
        self.callers: set[Future] = set()
        self.stopping = threading.Event()
        self.versions: dict[int, PromptVersion] = {}
        self.todo: deque[int] = deque()  # ids to try, read once rather than once per claim
        # Calls asked and not yet stored: a caller takes one before it starts a call, and
        # each is given back once that call's answer is stored.
        self.room = threading.Semaphore(self.limit)
        self.linking = link is not None
        # Nothing to claim before the first chunk is linked.
        self.exhausted = self.linking
        # Judgments taken (claimed, or leased by linking), and answers received: those taken,
        # not in `ready` and not received are being called.
        self.taken = self.received = 0
        self.held_wait = HELD_WAIT_FIRST
        self.pool = ThreadPoolExecutor(max_workers=self.limit, thread_name_prefix="judge")

    @property
    def calls_under_way(self) -> int:
        return self.taken - self.received - len(self.ready)

    def run(self) -> bool:
        """Until every judgment is settled (True), or the deadline passes or the charges
        stop it with nothing left under way (False)."""
        if self.spend.stop:
            self.halt(self.spend.stop)  # held already (by another worker of this judging)
        try:
            while True:
                self.start_calls()  # before the database is asked anything
                self.claim()
                self.link_next_chunk()
                if self.exhausted and not self.ready:
                    self.slots.release_kept()  # no call left to start: other workers may use them
                if self.calls_under_way > 0:
                    # Wait for an answer (not while chunks are left to link), and store it.
                    self.collect(0 if self.linking else ANSWER_WAIT_SECONDS)
                    self.store()
                    continue
                if self.linking or self.ready:
                    # The next chunk may bring calls; claimed ones wait for a calling thread
                    # (one that was ending as they came).
                    continue
                self.collect(0)
                self.store()
                if not judgments_open(submission_id=self.submission_id, judge_id=self.judge.pk):
                    return True
                if self.halted or time.monotonic() >= self.deadline:
                    return False
                self.wait_for_held()
        finally:
            # Calls under way end; none starts after them.
            self.stopping.set()
            self.ready.clear()
            wait(self.callers)
            self.collect(0)

    # --- The steps ------------------------------------------------------------------------

    def start_calls(self) -> None:
        """Start a calling thread for each judgment ready, up to the concurrency."""
        for ended in [f for f in self.callers if f.done()]:
            self.callers.discard(ended)
            ended.result()  # a calling thread that failed fails the work here
        # Counted before any starts: a new thread takes its first judgment at once.
        for _ in range(min(self.limit - len(self.callers), len(self.ready))):
            self.callers.add(self.pool.submit(self._caller))

    def claim(self) -> None:
        """Claim judgments ahead (leased, renewed by the heartbeat) while fewer than two rounds
        are ready, and start their calls."""
        if (
            self.halted
            or self.exhausted
            or len(self.ready) >= 2 * self.limit
            or time.monotonic() >= self.deadline
        ):
            return
        claimed = judgments_claim(
            submission_id=self.submission_id,
            judge_id=self.judge.pk,
            owner=self.owner,
            limit=4 * self.limit - len(self.ready),
            versions=self.versions,
            todo=self.todo,
            # While linking, the linked chunks' open judgments fill todo.
            read=not self.linking,
        )
        self.ready.extend(claimed)
        self.taken += len(claimed)
        self.exhausted = not claimed
        if claimed:
            self.held_wait = HELD_WAIT_FIRST
        self.start_calls()

    def link_next_chunk(self) -> None:
        """Link the next chunk while the calls claimed run: its leased judgments are ready at
        once, its other open ones are left to claim."""
        if not self.linking:
            return
        if self.lease is not None:
            ahead = max(LEASE_AHEAD, 4 * self.limit) - len(self.ready)
            self.lease.room = 0 if self.halted else ahead
        opened = next(self.link, None)
        if opened is None:
            self.linking = False
            if self.on_linked is not None and not self.halted:
                self.on_linked()
        elif not self.halted:
            self.todo.extend(sorted(opened.open_ids))
            self.ready.extend(opened.leased)
            self.taken += len(opened.leased)
        self.exhausted = False

    def collect(self, timeout: float) -> None:
        """Take the answers received: wait up to ``timeout`` for the first (woken at once when
        it comes), then every one already there."""
        try:
            self.answered.append(self.results.get(timeout=timeout))
            self.received += 1
            while True:
                self.answered.append(self.results.get_nowait())
                self.received += 1
        except queue.Empty:
            pass

    def store(self) -> None:
        """Store the answers collected with their charges, then give their room back."""
        if stored := _record_all(self.answered, self.plugin, self._charge):
            self._bound()  # before the room is given back: no call starts past the bound
            self.room.release(stored)

    def wait_for_held(self) -> None:
        """Nothing left to call here while judgments are open: held by another worker (this
        submission's, or one sharing the request). Wait for it to answer or for its lease to
        lapse, longer each time nothing came, then look again."""
        time.sleep(self.held_wait)
        self.held_wait = min(2 * self.held_wait, HELD_WAIT_MAX)
        self.exhausted = False

    def halt(self, reason: str) -> None:
        """No call starts any more: those claimed and not started go back (close)."""
        self.halted = reason
        spend_stop(submission_id=self.submission_id, judge_id=self.judge.pk, message=reason)
        if self.lease is not None:
            self.lease.room = 0
        while True:  # a calling thread may take one meanwhile: each is counted as it goes
            try:
                self.ready.pop()
            except IndexError:
                break
            self.taken -= 1

    def leases_renew(self) -> None:
        leases_renew(owner=self.owner)

    def close(self) -> None:
        """Give back what this worker holds: its kept slots, the answers not stored yet, and
        the judgments claimed but never started (the deadline came first), free at once for
        other workers."""
        self.stopping.set()
        self.pool.shutdown(wait=True)
        self.slots.release_kept()
        _record_all(self.answered, self.plugin, self._charge)
        Judgment.objects.filter(lease_owner=self.owner, status=Judgment.Status.RUNNING).update(
            status=Judgment.Status.PENDING, lease_owner="", lease_until=None
        )
        self.client.close()

    # --- Inside the steps -----------------------------------------------------------------

    def _caller(self) -> None:
        """A calling thread: takes room, then the next judgment ready, until none is left."""
        while not self.stopping.is_set():
            if not self.room.acquire(timeout=ROOM_WAIT_SECONDS):
                continue
            try:
                judgment = self.ready.popleft()
            except IndexError:
                self.room.release()
                return
            outcome = _call(self.client, self.slots, judgment, self.params, self.plugin)
            self.results.put((judgment, outcome))

    def _charge(self, judgment: Judgment, outcome: _CallOutcome):
        """The JudgeCharge of one answer (None when nothing is charged): the worker's
        submission pays for the calls it makes (a shared judgment, once)."""
        made = charge_for(
            judge=self.judge,
            submission_id=self.submission_id,
            team_id=self.team_id,
            judgment_id=judgment.pk,
            replies=outcome.replies,
            sent_chars=len(judgment.prompt) + len(judgment.system_prompt),
        )
        if made is not None and made.cost_usd:
            self.charged_since_read += made.cost_usd
        return made

    def _bound(self) -> None:
        """Read the room left again once this worker's charges since it was last read could
        have used it up: each of the workers a submission may have at once uses at most its
        share before it reads again."""
        if self.halted or self.spend.left is None or not self.charged_since_read:
            return
        if self.charged_since_read * settings.PIPELINE_PARALLEL_TASKS < self.spend.left:
            return
        self.spend = spend_room(submission_id=self.submission_id, judge_id=self.judge.pk)
        self.charged_since_read = Decimal(0)
        if self.spend.stop:
            self.halt(self.spend.stop)


def failed_judgments_reset(*, submission: Submission, judge: Judge | None = None) -> int:
    """Put this submission's failed judgments back to pending, queueing nothing (the pipeline's
    failed_judgments_retry queues the judging). Returns how many."""
    judge = judge or submission.judge
    return sum(
        judgments.filter(status=Judgment.Status.FAILED).update(
            status=Judgment.Status.PENDING, error="", lease_until=None, lease_owner=""
        )
        for judgments in linked_judgments(submission_id=submission.pk, judge_id=judge.pk)
    )
