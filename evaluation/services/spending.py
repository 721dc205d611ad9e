"""Judge spending: an estimate before the calls are queued, limits per team and over the site,
and what the calls cost (charged as their answers are stored).

The estimate counts the judgments a submission still has to call under one judge: a judgment
the cache settled (a submission of the same team asked the same) costs nothing. Input tokens are the
characters of the messages (and of the answer schema, for kinds that send one) divided by four,
rounded up per kind — the usual rule of thumb for English text with these tokenizers; output
tokens are the kind's allowance per call (JudgeKind.output_tokens, capped by the judge's
max_completion_tokens). Prices are the judge's USD per million tokens (0 is a price); a judge
without a price has no cost, so while a limit applies its calls are not queued at all.

A limit is a number of USD per calendar month (UTC): FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH per
team (Team.max_judge_spend_per_month overrides it) and FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH_SITE
over every submission (a submission without a team, made from the command line, meets only
the site's); 0 is no limit. What counts against one: the charges of this month, plus
what judging already queued is still expected to cost, plus this estimate.

The estimate is checked once, before the calls are queued; the charges are then bounded as they
come (spend_room): judging stops once a submission's charges pass its estimate by
FLOORBOARD_JUDGE_SPEND_MARGIN_PERCENT, or its team's (or the site's) room under the limit, and
the estimate is held with the figures. The request a benchmark sends is never changed for it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import Length
from django.utils import timezone

from evaluation.benchmarks import get_plugin
from evaluation.models import (
    Judge,
    JudgeCharge,
    PromptVersion,
    SpendEstimate,
    Submission,
    Team,
)
from evaluation.selectors import claimable, open_judgments

CHARS_PER_TOKEN = 4
MILLION = Decimal(1_000_000)
S = Submission.Status


def tokens_from_chars(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def judge_cost(judge: Judge, input_tokens: int, output_tokens: int) -> Decimal | None:
    """USD at the judge's prices; None when either price is unknown."""
    if judge.price_input_per_mtok is None or judge.price_output_per_mtok is None:
        return None
    return (
        input_tokens * judge.price_input_per_mtok + output_tokens * judge.price_output_per_mtok
    ) / MILLION


def output_allowance(judge: Judge, kind) -> int:
    allowance = kind.output_tokens
    if judge.send_sampling_params and judge.max_completion_tokens:
        allowance = min(allowance, judge.max_completion_tokens)
    return allowance


def month_start(now: datetime | None = None) -> datetime:
    now = now or timezone.now()
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def usd(value: Decimal | None) -> str:
    """Dollars and cents; sums under a dollar to a hundredth of a cent."""
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"


# --- The estimate ---------------------------------------------------------------------------


def calls_to_make(*, submission: Submission, judge: Judge) -> list[dict]:
    """The calls a worker may start for this submission under this judge, from its linked
    judgments: by kind and prompt version, how many and their messages' lengths ("n", "user",
    "system"), as judgments_plan finds them before linking."""
    now = timezone.now()
    groups: dict[tuple[str, int], dict] = {}
    for judgments in open_judgments(submission_id=submission.pk, judge_id=judge.pk):
        for found in (
            judgments.filter(claimable(now))
            .values("kind", "prompt_version_id")
            .annotate(
                n=Count("pk"), user=Sum(Length("prompt")), system=Sum(Length("system_prompt"))
            )
            .order_by()
        ):
            call_group_add(groups, **{name: found[name] or 0 for name in found})
    return call_groups(groups)


def call_group_add(
    groups: dict, *, kind: str, prompt_version_id: int, n: int, user: int, system: int
) -> None:
    """Count ``n`` calls of one kind and prompt version, with their messages' lengths, into
    ``groups`` (keyed by both; see call_groups)."""
    group = groups.setdefault(
        (kind, prompt_version_id),
        {"kind": kind, "prompt_version_id": prompt_version_id, "n": 0, "user": 0, "system": 0},
    )
    group["n"] += n
    group["user"] += user
    group["system"] += system


def call_groups(groups: dict) -> list[dict]:
    """The groups call_group_add counted, by kind and prompt version: what an estimate takes."""
    return [groups[key] for key in sorted(groups)]


def spend_estimate_store(
    *, submission: Submission, judge: Judge, to_call: list[dict] | None = None
) -> SpendEstimate:
    """Estimate the calls this submission still has to make under this judge and store it: the
    calls ``to_call`` (as calls_to_make gives them; by default read from the linked judgments).
    A staff release stays with the row."""
    by_kind: dict[str, dict] = {}
    calls = calls_at_most = input_tokens = output_tokens = 0
    if not judge.is_offline:
        plugin = get_plugin(submission.benchmark.plugin)
        if to_call is None:
            to_call = calls_to_make(submission=submission, judge=judge)
        schemas = {}
        for group in to_call:
            kind = plugin.judge_kind(group["kind"])
            chars = (group["user"] or 0) + (group["system"] or 0)
            if kind.response_format == "json_schema":
                version = group["prompt_version_id"]
                if version not in schemas:
                    schema = PromptVersion.objects.get(pk=version).schema
                    schemas[version] = len(json.dumps(schema)) if schema else 0
                chars += group["n"] * schemas[version]
            entry = by_kind.setdefault(
                group["kind"], {"calls": 0, "input_chars": 0, "output_tokens": 0}
            )
            entry["calls"] += group["n"]
            entry["input_chars"] += chars
            entry["output_tokens"] += group["n"] * output_allowance(judge, kind)
            calls_at_most += group["n"] * max(1, kind.answer_attempts)
        for entry in by_kind.values():
            entry["input_tokens"] = tokens_from_chars(entry.pop("input_chars"))
            calls += entry["calls"]
            input_tokens += entry["input_tokens"]
            output_tokens += entry["output_tokens"]
    cost = Decimal(0) if judge.is_offline else judge_cost(judge, input_tokens, output_tokens)
    estimate, _ = SpendEstimate.objects.update_or_create(
        submission=submission,
        judge=judge,
        defaults={
            "calls": calls,
            "calls_at_most": calls_at_most,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost,
            "by_kind": by_kind,
            "state": SpendEstimate.State.QUEUED,
            "held_message": "",
            "computed_at": timezone.now(),
        },
    )
    return estimate


# --- Limits ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpendRefusal:
    limit: str  # "team", "site", or "price" (a judge without a price under a limit)
    allowed: Decimal
    spent: Decimal
    reserved: Decimal
    message: str


def _limit(value) -> Decimal | None:
    """None: no limit (empty or 0)."""
    if value is None:
        return None
    value = Decimal(str(value))
    return value if value > 0 else None


def team_spend_limit(team: Team) -> Decimal | None:
    if team.max_judge_spend_per_month is not None:
        return _limit(team.max_judge_spend_per_month)
    return _limit(settings.MAX_JUDGE_SPEND_PER_MONTH)


def site_spend_limit() -> Decimal | None:
    return _limit(settings.MAX_JUDGE_SPEND_PER_MONTH_SITE)


def spent_since(*, since: datetime, team: Team | None = None) -> Decimal:
    """USD charged since then, for one team or (no team) the whole site."""
    charges = JudgeCharge.objects.filter(charged_at__gte=since)
    if team is not None:
        charges = charges.filter(team=team)
    return charges.aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)


def reserved(*, team: Team | None = None, excluding: SpendEstimate | None = None) -> Decimal:
    """What judging already queued (and still running) is expected to cost beyond what it has
    been charged so far."""
    queued = SpendEstimate.objects.filter(
        state=SpendEstimate.State.QUEUED, cost_usd__isnull=False
    ).filter(
        # Judging in progress: its own judge's (the submission judging), or another judge's
        # re-score (the submission stays scored meanwhile).
        Q(submission__status__in=(S.JUDGING, S.AGGREGATING)) | ~Q(submission__judge=F("judge"))
    )
    if team is not None:
        queued = queued.filter(submission__team=team)
    if excluding is not None:
        queued = queued.exclude(pk=excluding.pk)
    total = Decimal(0)
    for estimate in queued:
        charged = JudgeCharge.objects.filter(
            submission_id=estimate.submission_id,
            judge_id=estimate.judge_id,
            charged_at__gte=estimate.computed_at,
        ).aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)
        total += max(Decimal(0), estimate.cost_usd - charged)
    return total


def _limits(team: Team | None) -> list[tuple[str, Decimal, Team | None, str]]:
    """The limits judging for this team meets: (name, USD a month, whose spending counts (None:
    everyone's), how a message names it)."""
    checks = []
    if team is not None and (allowed := team_spend_limit(team)) is not None:
        checks.append(("team", allowed, team, f"the judge spending limit of team {team.name}"))
    if (allowed := site_spend_limit()) is not None:
        checks.append(("site", allowed, None, "the site-wide judge spending limit"))
    return checks


def judge_priced(judge: Judge) -> bool:
    """Whether the judge's calls have a cost (both prices set; 0 is a price)."""
    return judge.is_offline or judge_cost(judge, 0, 0) is not None


def spend_limits_apply(*, team: Team | None) -> bool:
    """Whether judging for this team (None: a submission without one) meets any limit."""
    return bool(_limits(team))


def _raise_it(name: str, then: str) -> str:
    """How staff let judging held at this limit go on."""
    if name == "team":
        return (
            "Staff can raise the team's limit (its monthly judge spending in the admin; "
            f"FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH is the default) or release this submission "
            f"past it; {then}"
        )
    return (
        "Staff can raise FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH_SITE or release this submission "
        f"past it; {then}"
    )


def unpriced_message(judge: Judge) -> str:
    """Why judging on a judge without a price is not queued while a limit applies."""
    missing = [
        name
        for name, price in (
            ("input", judge.price_input_per_mtok),
            ("output", judge.price_output_per_mtok),
        )
        if price is None
    ]
    return (
        f"Judging held: judge {judge.slug} has no {' or '.join(missing)} price, and judge "
        "spending is limited on this site, so what its calls cost could not be counted against "
        "the limit. No judge call was made. Staff set the judge's prices in USD per million "
        "input and output tokens (in the admin; 0 is a price), then retry."
    )


def spend_refusal(*, estimate: SpendEstimate, team: Team | None) -> SpendRefusal | None:
    """Why judging with this estimate may not be queued, or None. Callers hold the team row
    lock, so two submissions of one team cannot both pass on the same room."""
    if not estimate.calls:
        return None  # nothing to call
    checks = _limits(team)
    if estimate.cost_usd is None:
        if not checks:
            return None  # no price and no limit: nothing to count it against
        zero = Decimal(0)
        return SpendRefusal("price", zero, zero, zero, unpriced_message(estimate.judge))
    if not estimate.cost_usd:
        return None  # a price of 0: it costs nothing
    since = month_start()
    described = (
        f"This submission's estimate under judge {estimate.judge.slug} is "
        f"{usd(estimate.cost_usd)} ({estimate.calls:,} calls, about "
        f"{estimate.input_tokens:,} input tokens and up to {estimate.output_tokens:,} output "
        "tokens)."
    )
    for name, allowed, whose, label in checks:
        spent = spent_since(since=since, team=whose)
        held = reserved(team=whose, excluding=estimate)
        if spent + held + estimate.cost_usd <= allowed:
            continue
        message = (
            f"Judging held: {label} is {usd(allowed)} a month (calendar "
            f"month, UTC). Spent this month: {usd(spent)}, and {usd(held)} more expected by "
            f"judging in progress. {described} No judge call was made. "
            f"{_raise_it(name, 'then retry it.')}"
        )
        return SpendRefusal(name, allowed, spent, held, message)
    return None


def spend_check(
    *, submission: Submission, judge: Judge, to_call: list[dict] | None = None
) -> SpendEstimate:
    """Estimate (see spend_estimate_store), then hold the estimate (state HELD, with the
    message) when it would pass a limit and staff have not released it. The caller queues the
    calls only when it is QUEUED."""
    with transaction.atomic():
        team = None
        if submission.team_id is not None:
            team = Team.objects.select_for_update().get(pk=submission.team_id)
        estimate = spend_estimate_store(submission=submission, judge=judge, to_call=to_call)
        if estimate.released_at is not None:
            return estimate
        refusal = spend_refusal(estimate=estimate, team=team)
        if refusal is not None:
            estimate.state = SpendEstimate.State.HELD
            estimate.held_message = refusal.message
            estimate.save(update_fields=["state", "held_message"])
    return estimate


# --- Bounding the charges while judging ------------------------------------------------------


@dataclass(frozen=True)
class SpendRoom:
    """How much more the judging of one submission under one judge may be charged before it
    stops: ``left`` USD (None: nothing bounds it); ``stop``, when not empty, says why it stops
    now, with the figures."""

    left: Decimal | None
    stop: str = ""


def _charged(estimate: SpendEstimate) -> Decimal:
    """What the calls of the estimate's judging were charged since it was made."""
    return JudgeCharge.objects.filter(
        submission_id=estimate.submission_id,
        judge_id=estimate.judge_id,
        charged_at__gte=estimate.computed_at,
    ).aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)


def spend_room(*, submission_id: int, judge_id: int) -> SpendRoom:
    """The room left to this judging (see SpendRoom), from the charges stored so far: the
    estimate plus FLOORBOARD_JUDGE_SPEND_MARGIN_PERCENT of it, less what its calls were charged;
    and for each limit it meets, the limit less this month's charges and what other judging in
    progress still expects. Judging staff released past the limits, or whose judge has no price
    or a price of 0, is not bounded; a held estimate stops it at once (another worker of it
    stopped)."""
    estimate = (
        SpendEstimate.objects.select_related("judge", "submission__team")
        .filter(submission_id=submission_id, judge_id=judge_id)
        .first()
    )
    if estimate is None or estimate.released_at is not None or not estimate.cost_usd:
        # Released, no price, or nothing to pay (a price of 0): its calls charge nothing, as
        # the check before queuing let them.
        return SpendRoom(None)
    if estimate.state == SpendEstimate.State.HELD:
        return SpendRoom(Decimal(0), estimate.held_message or "Judging held.")
    charged = _charged(estimate)
    percent = settings.JUDGE_SPEND_MARGIN_PERCENT
    margin = Decimal(str(percent))
    allowed = estimate.cost_usd * (1 + margin / 100)
    bounds = [(allowed - charged, "margin", allowed, Decimal(0), Decimal(0), None, "")]
    since = month_start()
    for name, limit, whose, label in _limits(estimate.submission.team):
        spent = spent_since(since=since, team=whose)
        held = reserved(team=whose, excluding=estimate)
        bounds.append((limit - spent - held, name, limit, spent, held, whose, label))
    left = min(bound[0] for bound in bounds)
    for room, name, limit, spent, held, _, label in bounds:
        if room >= 0:
            continue
        ran = (
            f"the calls of this submission under judge {estimate.judge.slug} were charged "
            f"{usd(charged)} against its estimate of {usd(estimate.cost_usd)} "
            f"({estimate.calls:,} calls, about {estimate.input_tokens:,} input tokens and up to "
            f"{estimate.output_tokens:,} output tokens)"
        )
        if name == "margin":
            message = (
                f"Judging stopped: {ran}, more than the estimate and its margin of {percent:g}% "
                f"(FLOORBOARD_JUDGE_SPEND_MARGIN_PERCENT) allow: {usd(limit)}. Calls under way "
                "were let finish; no other call was made. Staff can release this submission "
                "past it (its judging then goes on to the end); a retry estimates what is left "
                "again."
            )
        else:
            message = (
                f"Judging stopped at {label}, {usd(limit)} a month (calendar month, UTC): "
                f"spent this month {usd(spent)}, and {usd(held)} more expected by other judging "
                f"in progress; {ran}. Calls under way were let finish; no other call was made. "
                f"{_raise_it(name, 'then retry it.')}"
            )
        return SpendRoom(left, message)
    return SpendRoom(left)


def spend_stop(*, submission_id: int, judge_id: int, message: str) -> bool:
    """Hold judging its charges stopped (see spend_room), with the figures; returns whether it
    was still queued (a staff release is not undone)."""
    return bool(
        SpendEstimate.objects.filter(
            submission_id=submission_id,
            judge_id=judge_id,
            state=SpendEstimate.State.QUEUED,
            released_at__isnull=True,
        ).update(state=SpendEstimate.State.HELD, held_message=message)
    )


def spend_held(*, submission_id: int, judge_id: int) -> bool:
    """Whether this judging is held at a spending limit."""
    return SpendEstimate.objects.filter(
        submission_id=submission_id, judge_id=judge_id, state=SpendEstimate.State.HELD
    ).exists()


def spend_release(*, submission: Submission, judge: Judge | None = None, by) -> bool:
    """Staff let a held submission's judging go past the limits. Returns whether one was held;
    the caller re-queues the submission."""
    judge = judge or submission.judge
    return bool(
        SpendEstimate.objects.filter(submission=submission, judge=judge).update(
            released_by=by, released_at=timezone.now()
        )
    )


def spend_estimate_done(*, submission_id: int, judge_id: int) -> None:
    """Judging finished: its estimate reserves nothing any more."""
    SpendEstimate.objects.filter(
        submission_id=submission_id, judge_id=judge_id, state=SpendEstimate.State.QUEUED
    ).update(state=SpendEstimate.State.DONE)


# --- Charges --------------------------------------------------------------------------------


def charge_for(
    *,
    judge: Judge,
    submission_id: int,
    team_id: int | None,
    judgment_id: int,
    replies: list,
    sent_chars: int,
) -> JudgeCharge | None:
    """The charge of one stored answer: every answered attempt's usage, or where the provider
    reported none, characters / 4 of what was sent and what came back."""
    if not replies:
        return None
    input_tokens = output_tokens = 0
    estimated = False
    for reply in replies:
        if reply.input_tokens is None or reply.output_tokens is None:
            estimated = True
        input_tokens += (
            reply.input_tokens if reply.input_tokens is not None else tokens_from_chars(sent_chars)
        )
        output_tokens += (
            reply.output_tokens
            if reply.output_tokens is not None
            else tokens_from_chars(len(reply.raw_output))
        )
    return JudgeCharge(
        submission_id=submission_id,
        team_id=team_id,
        judge=judge,
        judgment_id=judgment_id,
        calls=len(replies),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        estimated=estimated,
        cost_usd=judge_cost(judge, input_tokens, output_tokens),
        charged_at=timezone.now(),
    )
