"""Handing items to raters: batches, locks, submissions, and what raters did on an item.

The overlap rule: an item holds at most `overlap` live assignments (submitted, or open with a lock
in the future). Every write that can add a live assignment to an item (a new claim, re-locking an
expired one, extending a lock) first takes the item's row lock (FOR NO KEY UPDATE, which other
raters' rating inserts do not wait on) and recounts in a fresh statement,
so two raters can never both take the last place. Claims skip rows other raters hold
(SKIP LOCKED) instead of waiting on them. Each rater's own requests are serialised on the rater
row, which also keeps one rater's overlapping requests from deadlocking each other.
"""

from __future__ import annotations

import math
import random
import re
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from .calibration import refresh_after_commit
from .models import Assignment, Batch, Guideline, Item, Rater, Rating, RatingEvent, Study

MISSING = "missing"  # the value a rater sends for "can't judge: audio problem"
EVENT_KINDS = {
    "show",
    "hide",
    "play",
    "pause",
    "seek",
    "rate",
    "ended",
    "played_through",
    "choose",
    "resume",
    "revise",
    "comment",
}
# The players of an item's page: "response" (the system's output) and "context-<n>".
PLAYER = re.compile(r"(|response|context-\d{1,2})")
MAX_EVENTS_PER_CALL = 500
# How long a claim waits for other raters' claims in flight before saying nothing is free.
CLAIM_PATIENCE_SECONDS = 5.0
# Time on task arrives as deltas; one call never adds more than this (a sleeping laptop).
MAX_ACTIVE_DELTA_MS = 10 * 60 * 1000
# The columns' ranges: seq is a 32-bit positive integer, client_ms a 64-bit one (ms since the
# page loaded: a week is far beyond any rating session).
MAX_SEQ = 2**31 - 1
MAX_CLIENT_MS = 7 * 24 * 3600 * 1000


class RatingError(ValueError):
    """A rater's request that cannot be carried out; the message says why."""


class AssignmentGone(RatingError):
    """The rater's lock on this item expired and other raters have filled it since."""


@dataclass(frozen=True)
class Progress:
    batch_number: int
    position: int  # 1-based position of the current item in the batch
    batch_total: int
    batch_done: int
    rated_total: int


def _lock_span(study: Study) -> timedelta:
    return timedelta(minutes=study.lock_minutes)


def _live() -> Q:
    return Q(status=Assignment.Status.SUBMITTED) | Q(
        status=Assignment.Status.OPEN, locked_until__gt=timezone.now()
    )


def _live_counts(item_ids: list[int], *, exclude: int | None = None) -> dict[int, int]:
    rows = Assignment.objects.filter(item_id__in=item_ids).filter(_live())
    if exclude is not None:
        rows = rows.exclude(pk=exclude)
    return dict(rows.order_by().values("item").annotate(n=Count("pk")).values_list("item", "n"))


def _serialise(rater: Rater) -> Rater:
    """Lock the rater row for the rest of the transaction; refresh what may have changed."""
    locked = Rater.objects.select_for_update(of=("self",)).select_related("study").get(pk=rater.pk)
    if not locked.is_active:
        raise RatingError("this invite link has been withdrawn")
    return locked


# --- Claiming a batch ------------------------------------------------------------------------


def _claim_sample_items(rater: Rater, study: Study, want: int) -> list[int]:
    """Lock and take up to `want` sampled items this rater has not had, partly rated first."""
    live_count = Subquery(
        Assignment.objects.filter(item=OuterRef("pk"))
        .filter(_live())
        .order_by()
        .values("item")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    candidates = (
        Item.objects.filter(study=study, role=Item.Role.SAMPLE)
        # A task held out after the study was drawn is never shown to a rater.
        .exclude(task_result__task__held_out=True)
        .filter(~Exists(Assignment.objects.filter(item=OuterRef("pk"), rater=rater)))
        .annotate(live=Coalesce(live_count, 0))
        .filter(live__lt=study.overlap)
    )
    chosen: list[int] = []
    seen: set[int] = set()
    deadline = time.monotonic() + CLAIM_PATIENCE_SECONDS
    while len(chosen) < want:
        need = want - len(chosen)
        page = list(
            candidates.exclude(pk__in=seen)
            .order_by("-live", "shuffle_key")
            .select_for_update(skip_locked=True, of=("self",), no_key=True)
            .values_list("pk", flat=True)[:need]
        )
        if not page:
            # Everything left may be held by other raters' claims in flight: once they commit,
            # those items are either full (and drop out) or free again. Look again shortly.
            if time.monotonic() < deadline and candidates.exclude(pk__in=seen).exists():
                time.sleep(random.uniform(0.005, 0.02))
                continue
            break
        seen.update(page)
        # The candidate query read a snapshot from before the locks; count again under them.
        counts = _live_counts(page)
        for pk in page:
            if counts.get(pk, 0) < study.overlap and len(chosen) < want:
                chosen.append(pk)
    return chosen


def _pick_checks(rater: Rater, study: Study, role: str, want: int) -> list[int]:
    """Gold or attention items this rater has not seen, in an order seeded by the rater."""
    if want <= 0:
        return []
    ids = sorted(
        Item.objects.filter(study=study, role=role)
        .exclude(task_result__task__held_out=True)
        .filter(~Exists(Assignment.objects.filter(item=OuterRef("pk"), rater=rater)))
        .values_list("pk", flat=True)
    )
    random.Random(f"{rater.seed}/{role}/{len(ids)}").shuffle(ids)
    return ids[:want]


def batch_layout(rater_seed: int, number: int, samples: list[int], checks: list[int]) -> list[int]:
    """Item ids in the order the rater sees them: samples shuffled by the rater's seed, checks
    at seeded positions among them."""
    rng = random.Random(f"{rater_seed}/batch/{number}")
    samples = list(samples)
    rng.shuffle(samples)
    total = len(samples) + len(checks)
    check_at = dict(zip(sorted(rng.sample(range(total), len(checks))), checks, strict=True))
    order, rest = [], iter(samples)
    for position in range(total):
        order.append(check_at[position] if position in check_at else next(rest))
    return order


def batch_claim(*, rater: Rater) -> Batch | None:
    """The rater's unfinished batch, or a new one; None when nothing is left to rate now."""
    with transaction.atomic():
        rater = _serialise(rater)
        study = rater.study
        batch = rater.batches.filter(completed_at__isnull=True).order_by("number").last()
        if batch is not None:
            return batch
        if study.status != Study.Status.OPEN:
            raise RatingError("this study is not open for rating")
        room = study.batch_size - study.gold_per_batch - study.attention_per_batch
        samples = _claim_sample_items(rater, study, room)
        if not samples:
            return None
        checks = _pick_checks(rater, study, Item.Role.GOLD, study.gold_per_batch)
        checks += _pick_checks(rater, study, Item.Role.ATTENTION, study.attention_per_batch)
        number = (rater.batches.order_by("-number").values_list("number", flat=True).first()) or 0
        batch = Batch.objects.create(rater=rater, number=number + 1)
        until = timezone.now() + _lock_span(study)
        Assignment.objects.bulk_create(
            [
                Assignment(
                    code=secrets.token_hex(12),
                    batch=batch,
                    rater=rater,
                    item_id=item_id,
                    position=position,
                    locked_until=until,
                )
                for position, item_id in enumerate(
                    batch_layout(rater.seed, batch.number, samples, checks), start=1
                )
            ]
        )
        return batch


# --- Where the rater is ------------------------------------------------------------------------


def _relock(assignment: Assignment, study: Study) -> bool:
    """Take an expired lock back if the item still has room; release it otherwise."""
    Item.objects.select_for_update(no_key=True).filter(pk=assignment.item_id).first()
    if assignment.item.role != Item.Role.SAMPLE or (
        _live_counts([assignment.item_id], exclude=assignment.pk).get(assignment.item_id, 0)
        < study.overlap
    ):
        assignment.locked_until = timezone.now() + _lock_span(study)
        assignment.save(update_fields=["locked_until"])
        return True
    assignment.status = Assignment.Status.RELEASED
    assignment.save(update_fields=["status"])
    return False


def _extend_locks(batch: Batch, study: Study) -> None:
    """Push back the locks of a batch in use once they are half spent, under the items' locks
    (a lock must never come back to life after another rater counted it as expired)."""
    span = _lock_span(study)
    fading = batch.assignments.filter(
        status=Assignment.Status.OPEN, locked_until__lt=timezone.now() + span / 2
    )
    item_ids = sorted(fading.values_list("item_id", flat=True))
    if not item_ids:
        return
    list(
        Item.objects.select_for_update(no_key=True)
        .filter(pk__in=item_ids)
        .order_by("pk")
        .values("pk")
    )
    now = timezone.now()
    fading.filter(locked_until__gt=now).update(locked_until=now + span)


def _complete_if_done(batch: Batch) -> bool:
    if (
        batch.completed_at is None
        and not batch.assignments.filter(status=Assignment.Status.OPEN).exists()
    ):
        batch.completed_at = timezone.now()
        batch.save(update_fields=["completed_at"])
    return batch.completed_at is not None


def rater_current(*, rater: Rater, start: bool = False) -> Assignment | None:
    """The item the rater is on: the first open assignment of their unfinished batch (its lock
    renewed, or the item dropped from the batch if others filled it meanwhile). With start, a
    finished batch is followed by a new one. None: no batch in progress (or nothing left)."""
    while True:
        with transaction.atomic():
            rater = _serialise(rater)
            study = rater.study
            Rater.objects.filter(pk=rater.pk).update(last_seen_at=timezone.now())
            batch = rater.batches.filter(completed_at__isnull=True).order_by("number").last()
            if batch is not None:
                waiting = (
                    batch.assignments.filter(status=Assignment.Status.OPEN)
                    .select_related("item")
                    .order_by("position")
                )
                # One at a time: an expired one taken over meanwhile is released and skipped.
                while (assignment := waiting.first()) is not None:
                    if assignment.locked_until > timezone.now() or _relock(assignment, study):
                        _extend_locks(batch, study)
                        if assignment.first_shown_at is None:
                            assignment.first_shown_at = timezone.now()
                            assignment.save(update_fields=["first_shown_at"])
                        return assignment
                _complete_if_done(batch)
        if not start or study.status != Study.Status.OPEN:
            return None
        if batch_claim(rater=rater) is None:
            return None


def rater_progress(*, rater: Rater, assignment: Assignment | None) -> Progress:
    rated = Rating.objects.filter(rater=rater).count()
    if assignment is None:
        last = rater.batches.order_by("-number").first()
        return Progress(last.number if last else 0, 0, 0, 0, rated)
    rows = assignment.batch.assignments.exclude(status=Assignment.Status.RELEASED)
    counts = rows.aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED)),
        before=Count("pk", filter=Q(position__lt=assignment.position)),
    )
    return Progress(
        batch_number=assignment.batch.number,
        position=counts["before"] + 1,
        batch_total=counts["total"],
        batch_done=counts["done"],
        rated_total=rated,
    )


# --- What the rater did --------------------------------------------------------------------


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _clean_events(events) -> list[dict]:
    if not isinstance(events, list):
        raise RatingError("events must be a list")
    if len(events) > MAX_EVENTS_PER_CALL:
        raise RatingError(f"at most {MAX_EVENTS_PER_CALL} events per call")
    cleaned = []
    for number, event in enumerate(events):
        if not isinstance(event, dict):
            raise RatingError(f"event {number} is not an object")
        kind, player = event.get("kind"), event.get("player", "") or ""
        seq, at = event.get("seq"), event.get("t", 0)
        position = event.get("position")
        if kind not in EVENT_KINDS:
            raise RatingError(f"event {number}: unknown kind {kind!r}")
        if not isinstance(player, str) or not PLAYER.fullmatch(player):
            raise RatingError(f"event {number}: unknown player {player!r}")
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
            raise RatingError(f"event {number}: seq must be an integer from 0 to {MAX_SEQ}")
        if not _finite(at) or not 0 <= at <= MAX_CLIENT_MS:
            raise RatingError(f"event {number}: t must be a number of ms from 0 to {MAX_CLIENT_MS}")
        if position is not None and not (_finite(position) and abs(position) <= MAX_CLIENT_MS):
            raise RatingError(f"event {number}: position must be a number of seconds")
        cleaned.append(
            {
                "seq": seq,
                "kind": kind,
                "player": player,
                "position": None if position is None else float(position),
                "value": str(event.get("value", "") or "")[:50],
                "client_ms": int(at),
            }
        )
    return cleaned


def _check_label(study: Study, label) -> str | None:
    if label == MISSING:
        return None
    if label not in study.labels:
        raise RatingError(f"label {label!r} is not one of {[*study.labels, MISSING]}")
    return label


def _record(assignment: Assignment, study: Study, page: str, events, active_ms, positions):
    """Store new events (a resent one is ignored), count label changes, keep the draft."""
    if not isinstance(page, str) or not 1 <= len(page) <= 32:
        raise RatingError("page must be a string of 1 to 32 characters")
    cleaned = _clean_events(events)
    if not cleaned and not active_ms and positions is None:
        return
    known = set(
        RatingEvent.objects.filter(
            assignment=assignment, page=page, seq__in=[e["seq"] for e in cleaned]
        ).values_list("seq", flat=True)
    )
    fresh = sorted(
        {e["seq"]: e for e in cleaned if e["seq"] not in known}.values(), key=lambda e: e["seq"]
    )
    draft = dict(assignment.draft or {})
    for event in fresh:
        if event["kind"] == "choose":
            label = _check_label(study, event["value"])
            value = label or MISSING
            if not assignment.first_label:
                assignment.first_label = value
            elif draft.get("label") not in (None, value):
                assignment.label_changes += 1
            draft["label"] = value
        if event["player"] == "response" and event["kind"] in ("ended", "played_through"):
            assignment.response_played_through = True
    RatingEvent.objects.bulk_create(
        [RatingEvent(assignment=assignment, page=page, **event) for event in fresh],
        ignore_conflicts=True,
    )
    if active_ms is not None:
        if not _finite(active_ms) or active_ms < 0:
            raise RatingError("active_ms must be a non-negative number")
        assignment.active_ms += int(min(active_ms, MAX_ACTIVE_DELTA_MS))
    if positions is not None:
        if not isinstance(positions, dict) or not all(
            isinstance(key, str)
            and PLAYER.fullmatch(key)
            and key
            and _finite(value)
            and 0 <= value <= MAX_CLIENT_MS
            for key, value in positions.items()
        ):
            raise RatingError("positions must map the item's players to seconds")
        draft["positions"] = {key: round(float(v), 3) for key, v in positions.items()}
    assignment.draft = draft
    assignment.save(
        update_fields=[
            "draft",
            "active_ms",
            "label_changes",
            "first_label",
            "response_played_through",
        ]
    )


def _own_assignment(rater: Rater, code: str) -> Assignment:
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item", "batch")
        .filter(rater=rater, code=code)
        .first()
    )
    if assignment is None:
        raise RatingError("no such item in this rater's batches")
    return assignment


def assignment_record(
    *,
    rater: Rater,
    code: str,
    page: str,
    events: list,
    active_ms: float | None = None,
    positions: dict | None = None,
) -> Assignment:
    """Store what the rater did on an item that is still open (events after submit are kept
    too, but change nothing)."""
    with transaction.atomic():
        rater = _serialise(rater)
        assignment = _own_assignment(rater, code)
        if assignment.status != Assignment.Status.OPEN:
            return assignment
        _record(assignment, rater.study, page, events, active_ms, positions)
        return assignment


MAX_COMMENT = 2000


def _clean_comment(comment) -> str:
    if comment is None:
        return ""
    if not isinstance(comment, str):
        raise RatingError("comment must be text")
    comment = comment.strip()
    if len(comment) > MAX_COMMENT:
        raise RatingError(f"a comment has at most {MAX_COMMENT} characters")
    if "\x00" in comment:
        raise RatingError("a comment cannot hold a NUL character")
    return comment


def _clean_flag(flag) -> bool:
    if flag is None:
        return False
    if not isinstance(flag, bool):
        raise RatingError("flagged must be true or false")
    return flag


def assignment_submit(
    *,
    rater: Rater,
    code: str,
    label,
    guideline_version: int | None = None,
    page: str = "submit",
    events: list | None = None,
    active_ms: float | None = None,
    comment: str | None = None,
    flagged: bool | None = None,
) -> tuple[Rating, bool]:
    """Store the rater's answer for one assignment: (rating, created). A repeated submit of the
    same assignment returns the rating stored the first time and changes nothing (going back
    to change an answer is assignment_revise)."""
    comment, flagged = _clean_comment(comment), _clean_flag(flagged)
    with transaction.atomic():
        rater = _serialise(rater)
        study = rater.study
        assignment = _own_assignment(rater, code)
        if assignment.status == Assignment.Status.SUBMITTED:
            return assignment.rating, False
        if assignment.status == Assignment.Status.RELEASED:
            raise AssignmentGone("this item was handed to other raters after your lock expired")
        if study.status != Study.Status.OPEN:
            raise RatingError("this study is not open for rating")
        value = _check_label(study, label)
        _record(assignment, study, page, events or [], active_ms, None)
        item = assignment.item
        must_play = study.require_play_through and any(
            clip["role"] == "response" for clip in item.clips
        )
        if must_play and not assignment.response_played_through:
            raise RatingError("play the response to the end before submitting")
        if assignment.locked_until <= timezone.now() and not _relock(assignment, study):
            raise AssignmentGone("this item was handed to other raters after your lock expired")
        guideline = _guideline(study, guideline_version)
        try:
            with transaction.atomic():
                rating = Rating.objects.create(
                    assignment=assignment,
                    item=item,
                    rater=rater,
                    label=value,
                    missing_reason="" if value else Rating.Missing.AUDIO_PROBLEM,
                    guideline=guideline,
                    time_on_task_ms=assignment.active_ms,
                    label_changes=assignment.label_changes,
                    first_label=assignment.first_label or (value or MISSING),
                    response_played_through=assignment.response_played_through,
                    shown_at=assignment.first_shown_at,
                    comment=comment,
                    flagged=flagged,
                )
        except IntegrityError:
            return Rating.objects.get(assignment=assignment), False
        assignment.status = Assignment.Status.SUBMITTED
        assignment.submitted_at = rating.created_at
        assignment.save(update_fields=["status", "submitted_at"])
        _complete_if_done(assignment.batch)
        if item.role == Item.Role.SAMPLE:
            refresh_after_commit(study=study)
        return rating, True


def _guideline(study: Study, version: int | None) -> Guideline:
    guidelines = study.guidelines.order_by("-version")
    if version is None:
        guideline = guidelines.first()
    else:
        if not isinstance(version, int) or isinstance(version, bool):
            raise RatingError("guideline_version must be an integer")
        guideline = guidelines.filter(version=version).first()
    if guideline is None:
        raise RatingError(f"the study has no guideline version {version}")
    return guideline


# --- Going back within a batch ----------------------------------------------------------------


def revisable(*, rater: Rater, assignment: Assignment) -> bool:
    """A submitted item may be changed while its batch is the rater's latest one and the
    study is open: the rater goes back within the batch they are working on (or just did)."""
    if assignment.status != Assignment.Status.SUBMITTED:
        return False
    if rater.study.status != Study.Status.OPEN:
        return False
    latest = rater.batches.order_by("-number").values_list("pk", flat=True).first()
    return assignment.batch_id == latest


def assignment_previous(*, rater: Rater, assignment: Assignment | None) -> Assignment | None:
    """The submitted item before this one in the rater's latest batch (before the end of the
    batch when there is no current item), or None."""
    latest = rater.batches.order_by("-number").first()
    if latest is None:
        return None
    rows = latest.assignments.filter(status=Assignment.Status.SUBMITTED)
    if assignment is not None and assignment.batch_id == latest.pk:
        rows = rows.filter(position__lt=assignment.position)
    return rows.order_by("-position").select_related("item", "batch").first()


def assignment_next_submitted(*, rater: Rater, assignment: Assignment) -> Assignment | None:
    return (
        assignment.batch.assignments.filter(
            status=Assignment.Status.SUBMITTED, position__gt=assignment.position
        )
        .order_by("position")
        .first()
    )


def assignment_revise(
    *,
    rater: Rater,
    code: str,
    label,
    page: str = "revise",
    events: list | None = None,
    comment: str | None = None,
    flagged: bool | None = None,
) -> Rating:
    """Change the answer of an item the rater submitted earlier in their latest batch. The
    rating keeps its time; its label changes are counted and the change is logged."""
    comment, flagged = _clean_comment(comment), _clean_flag(flagged)
    with transaction.atomic():
        rater = _serialise(rater)
        study = rater.study
        assignment = _own_assignment(rater, code)
        if not revisable(rater=rater, assignment=assignment):
            raise RatingError(
                "only items of your current batch can be changed, while the study is open"
            )
        value = _check_label(study, label)
        rating = Rating.objects.select_for_update().get(assignment=assignment)
        cleaned = _clean_events(events or [])
        RatingEvent.objects.bulk_create(
            [RatingEvent(assignment=assignment, page=page[:32] or "revise", **e) for e in cleaned],
            ignore_conflicts=True,
        )
        changed = value != rating.label
        rating.label = value
        rating.missing_reason = "" if value else Rating.Missing.AUDIO_PROBLEM
        rating.label_changes += int(changed)
        rating.comment = comment
        rating.flagged = flagged
        rating.revised_at = timezone.now()
        rating.save(
            update_fields=[
                "label",
                "missing_reason",
                "label_changes",
                "comment",
                "flagged",
                "revised_at",
            ]
        )
        if changed and assignment.item.role == Item.Role.SAMPLE:
            refresh_after_commit(study=study)
        return rating


def gold_feedback(*, rating: Rating) -> dict | None:
    """What a rater is told after answering a gold item (one with a known answer)."""
    item = rating.item
    if item.role != Item.Role.GOLD:
        return None
    return {
        "expected": item.expected_label,
        "given": rating.label or MISSING,
        "correct": rating.label == item.expected_label,
    }


def items_left(*, rater: Rater) -> int:
    """How many sampled items this rater could still be handed now (not had, not full)."""
    live_count = Subquery(
        Assignment.objects.filter(item=OuterRef("pk"))
        .filter(_live())
        .order_by()
        .values("item")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    return (
        Item.objects.filter(study=rater.study, role=Item.Role.SAMPLE)
        .filter(~Exists(Assignment.objects.filter(item=OuterRef("pk"), rater=rater)))
        .annotate(live=Coalesce(live_count, 0))
        .filter(live__lt=rater.study.overlap)
        .count()
    )


def batch_active_ms(*, batch: Batch) -> int:
    """Time on task in a batch so far (tab visible), for the rater's break reminder."""
    return int(batch.assignments.aggregate(total=Sum("active_ms"))["total"] or 0)
