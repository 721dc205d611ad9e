"""Study set-up and assignment: sampling, snapshots of items, guidelines, overlap, batches with
gold and attention items, lock expiry, idempotent submits, what is recorded about a rating."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import timedelta

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from annotation import assignment as rating
from annotation.models import Assignment, Item, Rating, RatingEvent, Study, item_clip
from annotation.selectors import rater_by_token
from annotation.services import (
    StudyError,
    check_item_add,
    guideline_publish,
    rater_for_user,
    rater_update,
    study_set_status,
)
from evaluation.models import Submission, TaskJudgment
from tests.annotation.factories import SPEAKERS, invite, make_board, make_study

pytestmark = pytest.mark.django_db


def drain(rater, label="consistent") -> list[Rating]:
    """Rate everything the rater is given, batch after batch."""
    done = []
    while (current := rating.rater_current(rater=rater, start=True)) is not None:
        done.append(rating.assignment_submit(rater=rater, code=current.code, label=label)[0])
    return done


# --- Sampling -------------------------------------------------------------------------------


def test_the_papers_plan_14_strata_of_20_gives_280_stratified_items():
    # 30 discussion tasks per submission, every 6th with an empty reply (0, 6, 12, 18, 24):
    # 25 candidates per stratum, plus 3 turn-based tasks a discussion study must not draw.
    board = make_board(submissions=14, tasks=30, audio=False, other_tasks=3, empty_every=6)
    study = make_study(board, slug="paper", per_stratum=20, seed=11, open_now=False)
    items = list(study.items.select_related("task_result"))
    assert len(items) == 280
    assert Counter(i.stratum_id for i in items) == {s.pk: 20 for s in board.submissions}
    assert len({i.task_result_id for i in items}) == 280
    assert all(i.task_id.startswith("scenario_discussion-") for i in items)
    empties = {f"scenario_discussion-{n:03d}" for n in (0, 6, 12, 18, 24)}
    assert not {i.task_id for i in items} & empties
    # Discussion is judged (and rated) on what was said after the input, not the full text.
    assert all(i.response_text == i.task_result.detection["post_text"] for i in items)
    assert len({i.shuffle_key for i in items}) == 280

    def drawn(s):
        return {(i.stratum_id, i.task_id) for i in s.items.all()}

    again = make_study(board, slug="paper-again", per_stratum=20, seed=11, open_now=False)
    other = make_study(board, slug="paper-seed-12", per_stratum=20, seed=12, open_now=False)
    assert drawn(again) == drawn(study)
    assert drawn(other) != drawn(study)
    # One generator per stratum: fewer strata leave the remaining strata's draws unchanged.
    three = make_study(
        board, slug="paper-3", per_stratum=20, seed=11, open_now=False, strata=board.submissions[:3]
    )
    keep = {s.pk for s in board.submissions[:3]}
    assert drawn(three) == {pair for pair in drawn(study) if pair[0] in keep}


def test_a_stratum_too_small_is_named_and_nothing_is_written():
    board = make_board(submissions=2, tasks=6, audio=False, empty_every=3)  # 4 candidates each
    with pytest.raises(StudyError, match=rf"submission {board.submissions[0].pk} has 4"):
        make_study(board, per_stratum=5)
    assert Study.objects.count() == 0 and Item.objects.count() == 0


def test_bad_plans_are_refused_with_the_reason():
    board = make_board(submissions=1, tasks=3, audio=False)
    with pytest.raises(StudyError, match="kind 'appropriateness' is not one of"):
        make_study(board, per_stratum=1, kind="appropriateness")
    with pytest.raises(StudyError, match="room for sampled items"):
        make_study(board, per_stratum=1, batch_size=2, gold_per_batch=1, attention_per_batch=1)
    reported = Submission.objects.create(
        benchmark=board.benchmark, system=board.submissions[0].system, is_reported=True
    )
    with pytest.raises(StudyError, match="paper rows"):
        make_study(board, per_stratum=1, strata=[reported])
    assert Study.objects.count() == 0


def test_items_snapshot_transcript_response_audio_hashes_and_the_hidden_verdict():
    board = make_board(submissions=1, tasks=4, verdict=lambda s, t: t % 2 == 0)
    study = make_study(board, per_stratum=4)
    for item in study.items.all():
        n = int(item.task_id.rsplit("-", 1)[1])
        assert item.transcript == [
            {"speaker": SPEAKERS[k % 3], "text": f"Turn {k} of conversation {n}."} for k in range(4)
        ]
        assert item.response_text == f"Reply {n} from system 0 after the input."
        assert item.judge_label == ("consistent" if n % 2 == 0 else "inconsistent")
        for key, digest in (
            (item_clip(item, "context-0")["key"], item_clip(item, "context-0")["sha256"]),
            (item_clip(item, "response")["key"], item_clip(item, "response")["sha256"]),
        ):
            with default_storage.open(key, "rb") as handle:
                assert digest == hashlib.sha256(handle.read()).hexdigest()
        assert item_clip(item, "context-0")["key"].endswith("/all_stitched.wav")
        assert item_clip(item, "response")["key"].endswith("/response.wav")


def test_verdicts_are_read_as_scoring_reads_them():
    board = make_board(
        submissions=1, tasks=4, audio=False, empty_every=2, verdict=lambda s, t: True
    )
    # Task 1: no judgment link at all under this judge (never judged): no verdict.
    TaskJudgment.objects.filter(task_result__task__task_id="scenario_discussion-001").delete()
    study = make_study(board, per_stratum=4, skip_empty_responses=False)
    verdicts = dict(study.items.values_list("task_id", "judge_label"))
    assert verdicts["scenario_discussion-000"] == "inconsistent"  # empty reply: false, no call
    assert verdicts["scenario_discussion-002"] == "inconsistent"
    assert verdicts["scenario_discussion-001"] is None
    assert verdicts["scenario_discussion-003"] == "consistent"


# --- Guidelines ---------------------------------------------------------------------------------


def test_guideline_versions_and_the_version_each_rating_was_made_under():
    board = make_board(submissions=1, tasks=4, audio=False)
    study = make_study(board, per_stratum=4, overlap=1, batch_size=4)
    v1 = study.guidelines.get()
    assert v1.version == 1
    assert guideline_publish(study=study, text=v1.text) == v1  # unchanged text: no new version
    v2 = guideline_publish(study=study, text="Clarified: a reply to the wrong person is wrong.")
    assert v2.version == 2
    assert [g.version for g in study.guidelines.all()] == [2, 1]
    rater = invite(study)
    first = rating.rater_current(rater=rater, start=True)
    stored, _ = rating.assignment_submit(
        rater=rater, code=first.code, label="consistent", guideline_version=1
    )
    assert stored.guideline == v1
    second = rating.rater_current(rater=rater)
    assert (
        rating.assignment_submit(rater=rater, code=second.code, label="consistent")[0].guideline
        == v2
    )
    third = rating.rater_current(rater=rater)
    with pytest.raises(rating.RatingError, match="no guideline version 9"):
        rating.assignment_submit(
            rater=rater, code=third.code, label="consistent", guideline_version=9
        )
    assert Rating.objects.count() == 2


# --- Overlap and batches ---------------------------------------------------------------------------


def test_partly_rated_items_go_first_and_every_item_gets_exactly_overlap_raters():
    board = make_board(submissions=1, tasks=12, audio=False)
    study = make_study(board, per_stratum=12, overlap=3, batch_size=5)
    a, b, c, d, e = invite(study, 5)

    def batch_items(rater):
        batch = rating.batch_claim(rater=rater)
        return {x.item_id for x in batch.assignments.all()}

    first = batch_items(a)
    assert len(first) == 5
    assert batch_items(b) == first  # partly rated (held by one rater) before fresh ones
    assert batch_items(c) == first
    fourth = batch_items(d)
    assert len(fourth) == 5 and not fourth & first  # the first five are full
    for rater in (a, b, c, d, e):
        drain(rater)
    per_item = Counter(Rating.objects.values_list("item_id", flat=True))
    assert per_item == {pk: 3 for pk in study.items.values_list("pk", flat=True)}
    assert Rating.objects.count() == 36
    assert rating.rater_current(rater=e, start=True) is None


def test_a_batch_mixes_samples_with_gold_and_attention_items_at_seeded_places():
    board = make_board(submissions=1, tasks=14, audio=False)
    study = make_study(
        board, per_stratum=10, overlap=1, batch_size=6, gold_per_batch=1, attention_per_batch=1
    )
    sampled = set(study.items.values_list("task_id", flat=True))
    spare = sorted({f"scenario_discussion-{n:03d}" for n in range(14)} - sampled)
    submission = board.submissions[0]
    for task_id in spare[:2]:
        check_item_add(
            study=study,
            role=Item.Role.GOLD,
            submission=submission,
            task_id=task_id,
            expected_label="consistent",
        )
    for task_id in spare[2:]:
        check_item_add(
            study=study,
            role=Item.Role.ATTENTION,
            submission=submission,
            task_id=task_id,
            expected_label="inconsistent",
            instruction="To show you are listening, choose Inconsistent.",
        )
    rater = invite(study)
    roles_by_batch, gold_seen = [], []
    while (batch := rating.batch_claim(rater=rater)) is not None:
        rows = list(batch.assignments.select_related("item").order_by("position"))
        assert [r.position for r in rows] == list(range(1, len(rows) + 1))
        roles_by_batch.append(Counter(r.item.role for r in rows))
        gold_seen += [r.item_id for r in rows if r.item.role == Item.Role.GOLD]
        for row in rows:
            rating.assignment_submit(rater=rater, code=row.code, label="consistent")
    # 10 samples in batches of 4 + 1 gold + 1 attention while checks last.
    assert roles_by_batch == [
        Counter(sample=4, gold=1, attention=1),
        Counter(sample=4, gold=1, attention=1),
        Counter(sample=2),
    ]
    assert len(set(gold_seen)) == 2


def test_batch_layout_is_seeded_by_rater_and_places_every_item_once():
    samples, checks = list(range(100, 120)), [900, 901]
    one = rating.batch_layout(1234, 1, samples, checks)
    assert one == rating.batch_layout(1234, 1, samples, checks)
    assert sorted(one) == sorted(samples + checks)
    assert one != rating.batch_layout(98765, 1, samples, checks)
    assert one != rating.batch_layout(1234, 2, samples, checks)
    places = {rating.batch_layout(seed, 1, samples, checks).index(900) for seed in range(40)}
    assert len(places) > 5  # gold lands anywhere in the batch, not at a fixed place


def test_the_same_items_come_in_a_different_order_for_each_rater():
    board = make_board(submissions=1, tasks=10, audio=False)
    study = make_study(board, per_stratum=10, overlap=2, batch_size=10)
    a, b = invite(study, 2)
    a.seed, b.seed = 111, 222
    a.save(), b.save()
    order_a = list(rating.batch_claim(rater=a).assignments.values_list("item_id", flat=True))
    order_b = list(rating.batch_claim(rater=b).assignments.values_list("item_id", flat=True))
    assert sorted(order_a) == sorted(order_b) and order_a != order_b


# --- Locks --------------------------------------------------------------------------------------


def expire(rater):
    Assignment.objects.filter(rater=rater, status=Assignment.Status.OPEN).update(
        locked_until=timezone.now() - timedelta(seconds=1)
    )


def test_an_abandoned_batch_is_reclaimed_after_its_locks_expire():
    board = make_board(submissions=1, tasks=4, audio=False)
    study = make_study(board, per_stratum=4, overlap=1, batch_size=4)
    a, b = invite(study, 2)
    held = rating.rater_current(rater=a, start=True)
    assert rating.rater_current(rater=b, start=True) is None  # all four are A's for now
    expire(a)
    taken = drain(b)
    assert len(taken) == 4
    # A comes back: every item went to B, so A's batch empties and its submit is refused.
    assert rating.rater_current(rater=a) is None
    assert set(Assignment.objects.filter(rater=a).values_list("status", flat=True)) == {"released"}
    with pytest.raises(rating.AssignmentGone):
        rating.assignment_submit(rater=a, code=held.code, label="consistent")
    assert Counter(Rating.objects.values_list("item_id", flat=True)) == {
        pk: 1 for pk in study.items.values_list("pk", flat=True)
    }


def test_an_expired_lock_nobody_took_is_renewed_when_the_rater_returns():
    board = make_board(submissions=1, tasks=3, audio=False)
    study = make_study(board, per_stratum=3, overlap=1, batch_size=3)
    a = invite(study)
    first = rating.rater_current(rater=a, start=True)
    expire(a)
    again = rating.rater_current(rater=a)
    assert again.pk == first.pk and again.locked_until > timezone.now()
    rating.assignment_submit(rater=a, code=first.code, label="inconsistent")
    second = rating.rater_current(rater=a)
    expire(a)
    # Submitting straight after expiry also works while the item is free.
    assert rating.assignment_submit(rater=a, code=second.code, label="consistent")[1] is True


# --- Submitting -----------------------------------------------------------------------------------


def test_a_double_submit_is_stored_once_with_the_first_answer():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    rater = invite(study)
    current = rating.rater_current(rater=rater, start=True)
    first, created = rating.assignment_submit(rater=rater, code=current.code, label="consistent")
    again, created_again = rating.assignment_submit(
        rater=rater, code=current.code, label="inconsistent"
    )
    assert (created, created_again) == (True, False)
    assert again.pk == first.pk
    assert list(Rating.objects.values_list("label", flat=True)) == ["consistent"]


def test_cant_judge_is_stored_as_missing_and_unknown_labels_are_refused():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    rater = invite(study)
    current = rating.rater_current(rater=rater, start=True)
    with pytest.raises(rating.RatingError, match="label 'maybe' is not one of"):
        rating.assignment_submit(rater=rater, code=current.code, label="maybe")
    stored, _ = rating.assignment_submit(rater=rater, code=current.code, label="missing")
    assert stored.label is None and stored.missing_reason == "audio_problem"
    with pytest.raises(rating.RatingError, match="no such item"):
        rating.assignment_submit(rater=invite(study), code=current.code, label="consistent")


def test_events_time_on_task_and_changed_answers_are_recorded_once():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    rater = invite(study)
    current = rating.rater_current(rater=rater, start=True)
    events = [
        {"seq": 0, "kind": "play", "player": "context-0", "t": 100, "position": 0},
        {"seq": 1, "kind": "choose", "t": 900, "value": "consistent"},
        {"seq": 2, "kind": "choose", "t": 1500, "value": "inconsistent"},
        {"seq": 3, "kind": "rate", "player": "response", "t": 1700, "value": "1.5"},
        {"seq": 4, "kind": "choose", "t": 2100, "value": "consistent"},
    ]
    kwargs = {"rater": rater, "code": current.code, "page": "p1"}
    rating.assignment_record(events=events, active_ms=1000, positions={"context-0": 4.5}, **kwargs)
    rating.assignment_record(events=events, active_ms=2500, **kwargs)  # resent: kept once
    rating.assignment_record(events=[], active_ms=10**9, **kwargs)  # a sleeping laptop
    current.refresh_from_db()
    assert RatingEvent.objects.filter(assignment=current).count() == 5
    assert current.label_changes == 2 and current.first_label == "consistent"
    assert current.draft == {"label": "consistent", "positions": {"context-0": 4.5}}
    assert current.active_ms == 1000 + 2500 + 10 * 60 * 1000
    with pytest.raises(rating.RatingError, match="unknown kind 'dance'"):
        rating.assignment_record(events=[{"seq": 9, "kind": "dance"}], **kwargs)
    stored, _ = rating.assignment_submit(
        rater=rater,
        code=current.code,
        label="consistent",
        page="p1",
        events=[{"seq": 5, "kind": "choose", "t": 2600, "value": "consistent"}],
    )
    assert (stored.label_changes, stored.first_label) == (2, "consistent")
    assert stored.time_on_task_ms == current.active_ms
    assert stored.shown_at == current.first_shown_at is not None


def test_the_response_must_be_played_through_when_the_study_says_so():
    board = make_board(submissions=1, tasks=2)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2, require_play_through=True)
    rater = invite(study)
    current = rating.rater_current(rater=rater, start=True)
    with pytest.raises(rating.RatingError, match="play the response to the end"):
        rating.assignment_submit(rater=rater, code=current.code, label="consistent")
    assert Rating.objects.count() == 0
    # The conversation played through does not count; the response does.
    ended = [{"seq": 0, "kind": "played_through", "player": "context-0"}]
    rating.assignment_record(rater=rater, code=current.code, page="p", events=ended)
    with pytest.raises(rating.RatingError):
        rating.assignment_submit(rater=rater, code=current.code, label="consistent")
    stored, _ = rating.assignment_submit(
        rater=rater,
        code=current.code,
        label="consistent",
        page="p",
        events=[{"seq": 1, "kind": "played_through", "player": "response"}],
    )
    assert stored.response_played_through is True


# --- Study state and raters --------------------------------------------------------------------


def test_closed_and_draft_studies_and_withdrawn_links_take_no_ratings():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, open_now=False, overlap=1, batch_size=2)
    rater = invite(study)
    assert rater_by_token(token=rater.token) is None  # a draft study has no rater pages
    study_set_status(study=study, status=Study.Status.OPEN)
    current = rating.rater_current(rater=rater, start=True)
    study_set_status(study=study, status=Study.Status.CLOSED)
    with pytest.raises(rating.RatingError, match="not open"):
        rating.assignment_submit(rater=rater, code=current.code, label="consistent")
    study_set_status(study=study, status=Study.Status.OPEN)
    rater_update(rater=rater, is_active=False)
    assert rater_by_token(token=rater.token) is None
    with pytest.raises(rating.RatingError, match="withdrawn"):
        rating.rater_current(rater=rater)


def test_accounts_join_only_studies_that_take_them(django_user_model):
    board = make_board(submissions=1, tasks=2, audio=False)
    user = django_user_model.objects.create_user("rita", password="x")
    closed = make_study(board, slug="invites-only", per_stratum=2)
    with pytest.raises(StudyError, match="invitation only"):
        rater_for_user(study=closed, user=user)
    study = make_study(board, slug="accounts", per_stratum=2, allow_accounts=True)
    rater = rater_for_user(study=study, user=user)
    assert rater_for_user(study=study, user=user) == rater
    assert rater.user == user and len(rater.token) >= 43


def test_invite_tokens_are_long_and_distinct():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2)
    tokens = [r.token for r in invite(study, 20)]
    assert len(set(tokens)) == 20
    assert min(len(t) for t in tokens) >= 43  # 32 random bytes, URL-safe base64


def test_snapshot_rows_json_round_trip():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    drain(invite(study))
    from annotation.selectors import study_rating_rows

    rows = study_rating_rows(study=study)
    assert json.loads(json.dumps(rows)) == rows
    assert {r["label"] for r in rows} == {"consistent"}
