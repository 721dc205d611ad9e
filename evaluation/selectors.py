"""Reads of the evaluation context."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Sum
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import UploadLimits
from evaluation.bulk import batches
from evaluation.held_out import task_results_for
from evaluation.models import (
    Benchmark,
    Judge,
    JudgeCharge,
    Judgment,
    Membership,
    PromptVersion,
    Score,
    SpendEstimate,
    Submission,
    TaskJudgment,
    TaskResult,
    Team,
    WorkerBeat,
)
from evaluation.stats import wilson_pct


def current_prompts(*, benchmark: Benchmark) -> dict[str, PromptVersion]:
    """The newest version of each judge prompt."""
    current: dict[str, PromptVersion] = {}
    for prompt in benchmark.prompts.order_by("kind", "-version"):
        current.setdefault(prompt.kind, prompt)
    return current


def upload_limits(benchmark: Benchmark) -> UploadLimits:
    """The benchmark's own size limit, or the site-wide one when that is smaller."""
    plugin = get_plugin(benchmark.plugin)
    return UploadLimits(
        max_bytes=min(plugin.max_upload_bytes, settings.BUNDLE_MAX_UNCOMPRESSED_BYTES),
        max_ratio=settings.BUNDLE_MAX_COMPRESSION_RATIO,
    )


def hook_facts(submission: Submission) -> dict:
    """The facts a plug-in's hooks receive: the options the submitter declared (a run mode,
    say), then what submission-scope steps found."""
    return {**(submission.options or {}), **(submission.facts or {})}


# --- A submission's links and judgments, read table by table --------------------------------
#
# A join from judgments through the links to the task results of one submission is planned from
# PostgreSQL's statistics, and those know nothing of a submission made since they were taken: they
# say it has one task result, and, when taken while nothing was being judged, that no judgment is
# pending. With both, the planner compared every link of the judge with every task result of the
# submission once per judgment: 14.5 s to read the open judgments of one 927-task submission,
# 2.6 ms without statistics. Reads by indexed keys, one table each, stay linear whatever the
# statistics say, so these take the submission's task results first, then their links, then the
# judgments, in batches of ids.

ID_BATCH = 2000  # ids per IN list: far below SQLite's 32,766 variables


def id_batches(ids: Sequence[int]) -> Iterator[list[int]]:
    return batches(ids, ID_BATCH)


def submission_row_ids(*, submission_id: int) -> list[int]:
    """The submission's task results, by id."""
    return list(
        TaskResult.objects.filter(submission_id=submission_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def submission_links(*, submission_id: int, judge_id: int | None) -> Iterator[QuerySet]:
    """The submission's judged slots under one judge (TaskJudgment rows), as one queryset per
    batch of its task results; a slot is in exactly one."""
    for batch in id_batches(submission_row_ids(submission_id=submission_id)):
        yield TaskJudgment.objects.filter(task_result_id__in=batch, judge_id=judge_id)


def linked_judgment_ids(*, submission_id: int, judge_id: int | None) -> list[int]:
    """The judgments the submission's slots use under one judge, each once, in id order."""
    found: set[int] = set()
    for links in submission_links(submission_id=submission_id, judge_id=judge_id):
        found.update(links.filter(judgment__isnull=False).values_list("judgment_id", flat=True))
    return sorted(found)


def linked_judgments(*, submission_id: int, judge_id: int | None) -> Iterator[QuerySet]:
    """Those judgments (linked_judgment_ids) as one queryset per batch of ids: disjoint, so
    counts and sums over the batches add up."""
    for batch in id_batches(linked_judgment_ids(submission_id=submission_id, judge_id=judge_id)):
        yield Judgment.objects.filter(pk__in=batch)


OPEN = (Judgment.Status.PENDING, Judgment.Status.RUNNING)  # not settled yet


def open_judgments(*, submission_id: int, judge_id: int) -> Iterator[QuerySet]:
    """This submission's judgments under this judge that are not settled yet, as one queryset
    per batch (see evaluation.selectors.linked_judgments)."""
    for judgments in linked_judgments(submission_id=submission_id, judge_id=judge_id):
        yield judgments.filter(status__in=OPEN)


def judgments_open(*, submission_id: int, judge_id: int) -> bool:
    """Whether any of them is not settled yet."""
    return any(
        judgments.exists()
        for judgments in open_judgments(submission_id=submission_id, judge_id=judge_id)
    )


def claimable(now) -> Q:
    return Q(status=Judgment.Status.PENDING) | Q(
        status=Judgment.Status.RUNNING, lease_until__lt=now
    )


def claimable_ids(*, submission_id: int, judge_id: int) -> list[int]:
    """The judgments of this submission under this judge a worker may take now, in order."""
    now = timezone.now()
    found: list[int] = []
    for judgments in open_judgments(submission_id=submission_id, judge_id=judge_id):
        found.extend(judgments.filter(claimable(now)).values_list("pk", flat=True))
    return sorted(found)


def prompt_versions_used(*, submission_id: int, judge_id: int | None) -> list[tuple]:
    """The prompt versions behind those judgments: (kind, version, sha256), each once, by kind
    and version."""
    return _prompt_versions(linked_judgments(submission_id=submission_id, judge_id=judge_id))


def prompt_versions_named(used: set[tuple]) -> list[tuple]:
    """What prompt_versions_used gives, for judgments whose (kind, prompt version id) pairs
    were read already."""
    named = PromptVersion.objects.in_bulk({pk for _, pk in used if pk is not None})
    found = {
        (kind, named[pk].version, named[pk].sha256) if pk in named else (kind, None, None)
        for kind, pk in used
    }
    return _by_kind_and_version(found)


def _prompt_versions(batches) -> list[tuple]:
    found: set[tuple] = set()
    for judgments in batches:
        found.update(
            judgments.values_list("kind", "prompt_version__version", "prompt_version__sha256")
        )
    return _by_kind_and_version(found)


def _by_kind_and_version(found: set[tuple]) -> list[tuple]:
    return sorted(found, key=lambda used: (used[0], used[1]))


def submission_summary(*, submission) -> dict:
    """What `submit --json` prints: id, status, the results under the submission's judge, and
    how many judgments failed."""
    score = Score.objects.filter(submission=submission, judge_id=submission.judge_id).first()
    return {
        "submission": submission.pk,
        "status": submission.status,
        "incomplete": submission.is_partial,
        "results": score.results if score else None,
        "metrics": results_table(benchmark=submission.benchmark, results=score.results)
        if score
        else [],
        "failed_judgments": score.judgments_failed if score else 0,
        "error": submission.error or None,
    }


def submission_progress(*, submission) -> dict:
    """Counts behind the status line: tasks ingested, judgments finished and failed."""
    counts = {"total": 0, "skipped": 0, "done": 0, "failed": 0}
    for links in submission_links(submission_id=submission.pk, judge_id=submission.judge_id):
        found = links.aggregate(
            total=Count("pk"),
            skipped=Count("pk", filter=Q(judgment__isnull=True)),
            done=Count("pk", filter=Q(judgment__status=Judgment.Status.DONE)),
            failed=Count("pk", filter=Q(judgment__status=Judgment.Status.FAILED)),
        )
        counts = {name: counts[name] + found[name] for name in counts}
    return {
        "tasks_total": submission.benchmark.tasks.count(),
        "tasks_ingested": submission.tasks_ingested,
        "judgments_total": counts["total"] - counts["skipped"],
        "judgments_done": counts["done"],
        "judgments_failed": counts["failed"],
        "empty_responses": counts["skipped"],
        "decided_without_call": counts["skipped"],
    }


def submissions_visible_to(*, user) -> QuerySet:
    """Every submission this user may see: public ones (published and not hidden, or reported
    in a paper), their teams' own, and everything for staff. The one rule behind every page,
    API endpoint, export, chart and file URL."""
    public = Q(is_reported=True) | Q(is_published=True, is_hidden=False)
    if user is None or not user.is_authenticated:
        return Submission.objects.filter(public)
    if user.is_staff:
        return Submission.objects.all()
    # A subquery, not a join over memberships, so each submission comes back once.
    mine = Membership.objects.filter(user=user).values("team_id")
    return Submission.objects.filter(public | Q(team_id__in=mine))


def user_can_see_submission(*, user, submission) -> bool:
    return submissions_visible_to(user=user).filter(pk=submission.pk).exists()


def user_in_submission_team(*, user, submission: Submission) -> bool:
    if submission.team_id is None or user is None or not user.is_authenticated:
        return False
    return Membership.objects.filter(team_id=submission.team_id, user=user).exists()


def submission_change_refusal(*, user, submission: Submission, what: str = "") -> str:
    """Why the user may not publish, unpublish, show anonymously, reveal or delete the
    submission ("" when they may): its team's owners and staff decide what of the team's work
    others see. Only a member of the team is told the team's name and owners, so the reason
    never names the team of an anonymous submission to anyone outside it."""
    authenticated = user is not None and user.is_authenticated
    if authenticated and user.is_staff:
        return ""
    doing = what or "publish, unpublish, show anonymously, reveal or delete"
    role = None
    if authenticated and submission.team_id is not None:
        role = (
            Membership.objects.filter(team_id=submission.team_id, user=user)
            .values_list("role", flat=True)
            .first()
        )
    if role == Membership.Role.OWNER:
        return ""
    if role is None:
        return f"Only owners of the submission's team and staff can {doing} it."
    owners = list(
        Membership.objects.filter(team_id=submission.team_id, role=Membership.Role.OWNER)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )
    team = Team.objects.filter(pk=submission.team_id).values_list("name", flat=True).first()
    return (
        f"Only owners of {team} and staff can {doing} its submissions; you are a member. "
        f"Ask an owner: {', '.join(owners)}."
    )


def submission_create_refusal(*, user, team: Team, publish: bool, later: bool = False) -> str:
    """Why the user may not submit to the team now (any member may), or publish with it (its
    owners and staff may); "" when they may. ``later``: said by the worker finishing an upload
    whose start passed this check, so what changed since is what it names."""
    if user is None:
        return "the account that started this upload no longer exists"
    role = Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()
    if role is None:
        if later:
            return f"you are no longer a member of team {team.name}; nothing was submitted"
        return f"you are not a member of team {team.name}"
    if publish and role != Membership.Role.OWNER and not user.is_staff:
        if later:
            return (
                f"you are no longer an owner of team {team.name}, and only its owners may "
                "publish; nothing was submitted: upload again without publishing"
            )
        return (
            f"only owners of team {team.name} may publish a submission; leave publishing off "
            "and ask an owner to publish it once it is scored"
        )
    return ""


def judge_choice_message(benchmark: Benchmark, wanted: str = "") -> str:
    """Why a judge is needed and which ones there are, or that the benchmark takes no runs
    until it is imported (which adds its official judge)."""
    known = list(benchmark.judges.order_by("-is_official", "slug").values_list("slug", flat=True))
    if not known:
        return (
            f"benchmark {benchmark.slug} has no judge yet: it takes runs once an operator has "
            "imported it (manage.py import_benchmark), which adds its official judge"
        )
    asked = f"has no judge {wanted!r}" if wanted else "has no official judge"
    return f"benchmark {benchmark.slug} {asked}; choose one of: {', '.join(known)}"


# --- A team's and an account's submission limits ----------------------------------------

DAY = timedelta(hours=24)


@dataclass(frozen=True)
class LimitRefusal:
    limit: str  # "submissions_per_day", "concurrent_evaluations", "stored_bytes", ...
    allowed: int
    message: str
    retry_after: datetime | None  # when a slot frees up, if that is known in advance


def _limit(team_value: int | None, default: int) -> int:
    return default if team_value is None else team_value


def _duration(delta: timedelta) -> str:
    minutes = max(1, math.ceil(delta.total_seconds() / 60))
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _refusal(*, counted, who: str, per_day: int, concurrent: int, now) -> LimitRefusal | None:
    recent = counted.filter(created_at__gt=now - DAY).order_by("created_at")
    made = recent.count()
    if made >= per_day:
        if per_day == 0:
            return LimitRefusal("submissions_per_day", 0, f"{who} may not submit at present.", None)
        # The count drops below the limit when the (made - per_day + 1)-th oldest leaves the window.
        frees_at = recent.values_list("created_at", flat=True)[made - per_day] + DAY
        return LimitRefusal(
            "submissions_per_day",
            per_day,
            f"{who} has reached its limit of {per_day} submissions per day "
            f"(rolling 24 hours; failed ones do not count). The next one can be made at "
            f"{frees_at:%Y-%m-%d %H:%M} UTC, in {_duration(frees_at - now)}.",
            frees_at,
        )
    running = counted.exclude(status=Submission.Status.SCORED).order_by("created_at")
    in_progress = running.count()
    if in_progress >= concurrent:
        shown = ", ".join(f"#{pk}" for pk in running.values_list("pk", flat=True)[:10])
        return LimitRefusal(
            "concurrent_evaluations",
            concurrent,
            f"{who} has {in_progress} evaluation(s) in progress, its limit of "
            f"{concurrent} concurrent evaluations. Another can start when one of them "
            f"({shown}) is scored or fails.",
            None,
        )
    return None


def _storage_refusal(*, stored, who: str, most: int, adding: int) -> LimitRefusal | None:
    """Refused when the bytes kept by these submissions (failed ones included), with
    ``adding`` more, would pass ``most`` (0: no limit)."""
    if not most:
        return None
    kept = stored.aggregate(total=Sum("stored_bytes"))["total"] or 0
    if kept + adding <= most:
        return None
    return LimitRefusal(
        "stored_bytes",
        most,
        f"{who} keeps {kept:,} bytes of submissions (failed ones included); with this upload "
        f"({adding:,} bytes counted) it would pass its storage limit of {most:,} bytes. "
        "Delete a submission it no longer needs; a failed one's files are deleted "
        f"{settings.FAILED_FILES_KEEP_DAYS:g} days after it failed.",
        None,
    )


def _counted():
    return Submission.objects.filter(is_reported=False).exclude(status=Submission.Status.FAILED)


def _stored():
    return Submission.objects.filter(is_reported=False)


def team_limit_refusal(
    *, team: Team, adding_bytes: int = 0, now: datetime | None = None
) -> LimitRefusal | None:
    """Why this team may not create a submission of ``adding_bytes`` (its bundle and what it
    unpacks to) right now, or None. Failed submissions count against the storage limit only.
    Callers that go on to create hold the team row lock."""
    who = f"Team {team.name}"
    return _refusal(
        counted=_counted().filter(team=team),
        who=who,
        per_day=_limit(team.max_submissions_per_day, settings.MAX_SUBMISSIONS_PER_DAY),
        concurrent=_limit(team.max_concurrent_evaluations, settings.MAX_CONCURRENT_EVALUATIONS),
        now=now or timezone.now(),
    ) or _storage_refusal(
        stored=_stored().filter(team=team),
        who=who,
        most=settings.MAX_STORED_BYTES_PER_TEAM,
        adding=adding_bytes,
    )


def account_limit_refusal(
    *, user, adding_bytes: int = 0, now: datetime | None = None
) -> LimitRefusal | None:
    """The same limits for one account over all its teams, so that making more teams does not
    make more room. Callers that go on to create hold the user row lock."""
    who = f"Your account ({user.get_username()})"
    return _refusal(
        counted=_counted().filter(submitted_by=user),
        who=who,
        per_day=settings.MAX_SUBMISSIONS_PER_DAY_PER_ACCOUNT,
        concurrent=settings.MAX_CONCURRENT_EVALUATIONS_PER_ACCOUNT,
        now=now or timezone.now(),
    ) or _storage_refusal(
        stored=_stored().filter(submitted_by=user),
        who=who,
        most=settings.MAX_STORED_BYTES_PER_ACCOUNT,
        adding=adding_bytes,
    )


# --- Judge usage ----------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeUsage:
    judgments: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None  # None when the judge has no price
    prompt_versions: list[tuple[str, int, str]]


def judge_usage(*, submission, judge) -> JudgeUsage:
    """Tokens and cost of the distinct judgments behind one submission's score under one judge
    (a judgment shared by several tasks counts once), priced with the judge's USD per million
    tokens, and the prompt versions they used."""
    judge_id = judge.pk if judge is not None else None
    n = tokens_in = tokens_out = 0
    # Their ids are read once for the totals and the prompt versions.
    batches = list(linked_judgments(submission_id=submission.pk, judge_id=judge_id))
    for judgments in batches:
        totals = judgments.aggregate(
            n=Count("pk"), tokens_in=Sum("input_tokens"), tokens_out=Sum("output_tokens")
        )
        n += totals["n"]
        tokens_in += totals["tokens_in"] or 0
        tokens_out += totals["tokens_out"] or 0
    cost = None
    if judge is not None and None not in (judge.price_input_per_mtok, judge.price_output_per_mtok):
        cost = (
            tokens_in * judge.price_input_per_mtok + tokens_out * judge.price_output_per_mtok
        ) / Decimal(1_000_000)
    versions = _prompt_versions(batches)
    return JudgeUsage(
        judgments=n,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
        prompt_versions=[(kind, version, sha[:12]) for kind, version, sha in versions],
    )


@dataclass(frozen=True)
class JudgeSpending:
    """One judge's spending on one submission: the estimate made before its calls were queued
    (None before judging was prepared) and what the calls this submission made were charged."""

    judge: object
    estimate: object | None
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None  # None when no call was priced
    estimated_usage: bool  # some answer came without usage: its tokens are characters / 4

    @property
    def held(self) -> bool:
        return self.estimate is not None and self.estimate.state == "held"


def submission_spend_held(*, submission) -> list:
    """The submission's judging held at a spending limit (before its calls, or stopped by its
    charges), each estimate with its judge and the message with the figures. Shown only to its
    team and staff."""
    return list(
        SpendEstimate.objects.filter(submission=submission, state=SpendEstimate.State.HELD)
        .select_related("judge")
        .order_by("judge__slug")
    )


def submission_spending(*, submission) -> list[JudgeSpending]:
    """Estimate and spending per judge, the submission's own judge first. Shown only to its team
    and staff."""
    estimates = {
        e.judge_id: e
        for e in SpendEstimate.objects.filter(submission=submission).select_related("released_by")
    }
    charged = {
        row["judge_id"]: row
        for row in JudgeCharge.objects.filter(submission=submission)
        .values("judge_id")
        .annotate(
            calls=Sum("calls"),
            tokens_in=Sum("input_tokens"),
            tokens_out=Sum("output_tokens"),
            cost=Sum("cost_usd"),
            estimated=Count("pk", filter=Q(estimated=True)),
        )
        .order_by()
    }
    judges = Judge.objects.filter(pk__in={*estimates, *charged} - {None})
    found = []
    for judge in sorted(judges, key=lambda j: (j.pk != submission.judge_id, j.slug)):
        row = charged.get(judge.pk, {})
        found.append(
            JudgeSpending(
                judge=judge,
                estimate=estimates.get(judge.pk),
                calls=row.get("calls") or 0,
                input_tokens=row.get("tokens_in") or 0,
                output_tokens=row.get("tokens_out") or 0,
                cost_usd=row.get("cost"),
                estimated_usage=bool(row.get("estimated")),
            )
        )
    return found


# --- Task results ---------------------------------------------------------------------------

VERDICT_FILTERS = ("correct", "wrong", "none")


def task_filter_lookup(task_filter) -> str:
    """The ORM lookup of a plug-in's task filter on TaskResult."""
    prefix = "task__spec" if task_filter.source == "spec" else "detection"
    return f"{prefix}__{task_filter.field}"


def task_results_filtered(
    *, submission, filters: dict, judge_id: int | None = None, user=None
) -> QuerySet:
    """A submission's task results, filtered by the plug-in's task filters (name -> value: a
    bool for "bool" filters, a string otherwise) and by verdict under a judge: correct = every
    slot passed, wrong = some slot failed (an outcome decided without a call included), none =
    not judged yet or failed. Ordered by task id. Held-out tasks for staff only
    (evaluation/held_out.py)."""
    plugin = get_plugin(submission.benchmark.plugin)
    rows = (
        task_results_for(user=user, submission=submission)
        .select_related("task")
        .order_by("task__task_id")
    )
    for task_filter in plugin.task_filters:
        value = filters.get(task_filter.name)
        if value is None or value == "":
            continue
        rows = rows.filter(**{task_filter_lookup(task_filter): value})
    verdict = filters.get("verdict")
    if verdict:
        links = TaskJudgment.objects.filter(
            task_result=OuterRef("pk"), judge=judge_id or submission.judge_id
        )
        wrong = Exists(
            links.filter(
                Q(judgment__isnull=True, fixed__verdict=False)
                | Q(judgment__status=Judgment.Status.DONE, judgment__verdict=False)
            )
        )
        unsettled = Exists(
            links.filter(judgment__isnull=False).exclude(judgment__status=Judgment.Status.DONE)
        )
        if verdict == "correct":
            rows = rows.filter(Exists(links), ~wrong, ~unsettled)
        elif verdict == "wrong":
            rows = rows.filter(wrong)
        else:
            rows = rows.filter(~wrong).filter(unsettled | ~Exists(links))
    return rows


def slot_state(*, judgment_id, status, verdict, fixed) -> str:
    """correct / wrong / empty (decided without a call) / pending / running / failed."""
    if judgment_id is None:
        return "empty" if (fixed or {}).get("verdict") is False else "decided"
    if status == "done":
        if verdict is None:
            return "done"
        return "correct" if verdict else "wrong"
    return status


_DIGITS = re.compile(r"(\d+)")


def slot_sort_key(slot: str) -> tuple:
    """A judged slot's place among its task's: runs of digits compare as numbers, so rubric item
    "2" comes before "10" and "answer-9" before "answer-10"."""
    # re.split with one group alternates text and digits, text first: the odd parts are digits.
    parts = _DIGITS.split(slot or "")
    return tuple(int(part) if index % 2 else part for index, part in enumerate(parts))


def task_verdicts(*, rows, judge_id: int | None) -> dict[int, list]:
    """(kind and slot, state) per task result under one judge."""
    found: dict[int, list] = {row.pk: [] for row in rows}
    links = (
        TaskJudgment.objects.filter(task_result__in=[row.pk for row in rows], judge_id=judge_id)
        .order_by("kind", "slot")
        .values_list(
            "task_result_id",
            "kind",
            "slot",
            "fixed",
            "judgment_id",
            "judgment__status",
            "judgment__verdict",
        )
    )
    links = sorted(links, key=lambda link: (link[1], slot_sort_key(link[2])))
    for row_pk, kind, slot, fixed, judgment_id, status, verdict in links:
        name = f"{kind} {slot}".strip()
        found[row_pk].append(
            (name, slot_state(judgment_id=judgment_id, status=status, verdict=verdict, fixed=fixed))
        )
    return found


def results_table(*, benchmark, results: dict | None) -> list[dict]:
    """Every declared metric of a score, per split, with the count and denominator behind a
    rate and its 95% interval by the metric's method: what the CLI prints."""

    plugin = get_plugin(benchmark.plugin)
    table = []
    for split in plugin.splits or (None,):
        part = (results or {}).get(split.key) if split else results
        if split is not None and part is None:
            continue  # nothing of this split was submitted
        for metric in plugin.metrics:
            counts = plugin.metric_counts(metric, part)
            if metric.interval == "wilson":
                interval = wilson_pct(metric.node(part), z=plugin.wilson_z)
            elif metric.interval == "bootstrap":
                interval = metric.stored_interval(part)
            else:
                interval = None
            table.append(
                {
                    "split": split.key if split else None,
                    "metric": metric.key,
                    "label": f"{metric.group} {metric.label}".strip(),
                    "value": metric.value(part),
                    "unit": metric.unit,
                    "count": counts[0] if counts else None,
                    "total": counts[1] if counts else None,
                    "interval": list(interval) if interval else None,
                }
            )
    return table


# --- Workers ---------------------------------------------------------------------------------


def worker_last_seen(*, queue: str | None = None):
    """When a worker consuming ``queue`` (the default task queue) last said it was alive; None
    when none ever did (or none has for a day)."""
    return (
        WorkerBeat.objects.filter(queue=queue or settings.CELERY_TASK_DEFAULT_QUEUE)
        .order_by("-seen_at")
        .values_list("seen_at", flat=True)
        .first()
    )


def workers_silent(*, queue: str | None = None) -> dict | None:
    """None while a worker on ``queue`` has been seen within WORKER_SILENT_SECONDS; else what
    a page or a command says: {"seen_at": when last seen or None, "seconds": how long ago}."""
    seen = worker_last_seen(queue=queue)
    if seen is None:
        return {"seen_at": None, "seconds": None}
    quiet = (timezone.now() - seen).total_seconds()
    if quiet < settings.WORKER_SILENT_SECONDS:
        return None
    return {"seen_at": seen, "seconds": int(quiet)}
