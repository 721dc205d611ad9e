"""Calibration studies: a sample drawn uniformly at random within each submission whatever
the judge said, with its inclusion probabilities; extension by more draws of the same random
order; the calibrated scores written from the raters' labels (equal to the estimator applied
to outcome arrays built here by hand from the board's verdicts and the labels given); who may
extend a study; and what the dashboard says of calibration."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation import assignment as rating
from annotation.calibration import (
    calibration_extend,
    calibration_refresh,
    permutation,
    study_delete,
)
from annotation.models import CalibrationStratum, Item, Study
from annotation.services import StudyError, rater_update
from evaluation import calibration as core
from evaluation.benchmarks.base import CalibratedMetric
from evaluation.models import CalibratedScore, Judgment
from evaluation.services.pipeline import submission_aggregate
from evaluation.stats import ppi_mean
from tests.annotation.factories import invite, make_board, make_study

pytestmark = pytest.mark.django_db

TASKS = 30
METRIC = "discussion.app_acc"


def verdict(s: int, t: int) -> bool:
    return (s + t) % 3 != 0


def scored_board(**options):
    board = make_board(submissions=2, tasks=TASKS, audio=False, verdict=verdict, **options)
    for submission in board.submissions:
        submission_aggregate(submission=submission, judge=board.judge)
    return board


def calibration_study(board, *, slug="calib", per_stratum=12, **options):
    return make_study(
        board,
        slug=slug,
        per_stratum=per_stratum,
        calibrated_metric=METRIC,
        overlap=1,
        batch_size=50,
        **options,
    )


def sampled(study) -> set[tuple[int, str]]:
    return set(study.items.filter(role=Item.Role.SAMPLE).values_list("stratum_id", "task_id"))


def task_number(task_id: str) -> int:
    return int(re.search(r"(\d+)$", task_id).group(1))


def human(task_id: str) -> str:
    """The raters' answer in these tests: consistent unless the task number is a multiple of 4
    (so people and the judge disagree on some units, in both directions)."""
    return "inconsistent" if task_number(task_id) % 4 == 0 else "consistent"


def rate_everything(rater, label_of=human) -> int:
    count = 0
    while (current := rating.rater_current(rater=rater, start=True)) is not None:
        rating.assignment_submit(
            rater=rater, code=current.code, label=label_of(current.item.task_id)
        )
        count += 1
    return count


def expected(board, study, s_index: int, *, labels=human):
    """ppi_mean on arrays built from the board's definition: the judge's verdict on each of the
    submission's discussion tasks (an empty response is judged False without a call; here
    none is empty), and the raters' label on the sampled ones."""
    submission = board.submissions[s_index]
    judge = np.array([float(verdict(s_index, t)) for t in range(TASKS)])
    rated = sorted(
        task_number(task_id)
        for task_id in study.items.filter(stratum=submission).values_list("task_id", flat=True)
    )
    people = np.array([float(labels(f"x-{t:03d}") == "consistent") for t in rated])
    return ppi_mean(judge=judge, labelled=np.array(rated), human=people)


# --- The sample ----------------------------------------------------------------------------


def test_the_permutation_draws_every_unit_with_probability_n_over_n():
    size, n, seeds = 20, 5, 4000
    counts = Counter()
    extended = Counter()
    for seed in range(seeds):
        order = permutation(seed=seed, submission_id=7, size=size)
        assert sorted(order) == list(range(size))
        counts.update(order[:n])
        extended.update(order[: n + 3])
    # Binomial(4000, 1/4): sd 27.4; (4000, 2/5): sd 31.0. Five sd either side.
    for index in range(size):
        assert abs(counts[index] - seeds * n / size) < 5 * 27.4
        assert abs(extended[index] - seeds * (n + 3) / size) < 5 * 31.0


def test_the_sample_is_the_same_whatever_the_judge_said():
    board = scored_board()
    first = calibration_study(board, slug="first", seed=11)
    before = sampled(first)
    study_delete(study=first)
    # Every verdict turned round, the board re-scored: the very same units are drawn.
    for judgment in Judgment.objects.filter(kind="discussion"):
        judgment.verdict = not verdict(*map(int, judgment.reasoning.split("-")[-2:]))
        judgment.save(update_fields=["verdict"])
    for submission in board.submissions:
        submission_aggregate(submission=submission, judge=board.judge)
    again = calibration_study(board, slug="again", seed=11)
    assert sampled(again) == before
    judged = {
        item.task_id: item.judge_label for item in again.items.filter(stratum=board.submissions[0])
    }
    assert all(
        label == ("inconsistent" if verdict(0, task_number(task_id)) else "consistent")
        for task_id, label in judged.items()
    )
    # Another seed draws another sample.
    study_delete(study=again)
    assert sampled(calibration_study(board, slug="other", seed=12)) != before


def test_every_unit_the_metric_counts_is_drawable_and_probabilities_are_recorded():
    # Every fifth discussion response is empty (judged False without a call): a calibration
    # sample still draws from them, unlike an agreement study that skips empty responses.
    board = scored_board(empty_every=5)
    study = calibration_study(board, per_stratum=29)
    assert not study.skip_empty_responses
    for stratum in CalibrationStratum.objects.filter(study=study):
        assert stratum.population == TASKS and stratum.fixed == []
        assert stratum.sampled == 29
        items = study.items.filter(stratum_id=stratum.submission_id)
        assert items.count() == 29
        assert set(items.values_list("inclusion_probability", flat=True)) == {29 / 30}
        assert len({task_number(t) for t in items.values_list("task_id", flat=True)}) == 29
    study_delete(study=study)
    with pytest.raises(StudyError, match="not enough units of discussion.app_acc"):
        calibration_study(board, slug="short", per_stratum=31)


def test_extension_adds_the_next_draws_and_updates_every_probability():
    board = scored_board()
    study = calibration_study(board, per_stratum=5)
    first, second = board.submissions
    before = sampled(study)
    stratum = CalibrationStratum.objects.get(study=study, submission=first)
    added = calibration_extend(study=study, counts={first.pk: 3, second.pk: 0})
    assert added == 3
    after = sampled(study)
    assert before < after and len(after - before) == 3
    new = {task for s, task in after - before if s == first.pk}
    expected_next = {
        board.rows(first)[0].task.task_id.rsplit("-", 1)[0] + f"-{i:03d}"
        for i in stratum.order[5:8]
    }
    assert new == expected_next
    probabilities = dict(study.items.values_list("stratum_id", "inclusion_probability").distinct())
    assert probabilities == {first.pk: 8 / 30, second.pk: 5 / 30}
    # Asking for more than is left draws what is left.
    assert calibration_extend(study=study, counts={second.pk: 100}) == 25
    assert study.items.filter(stratum=second).count() == 30
    with pytest.raises(StudyError, match="not strata"):
        calibration_extend(study=study, counts={999: 1})


def test_a_task_the_rateable_units_cannot_reproduce_is_fixed_as_the_board_counts_it():
    declared = CalibratedMetric(metric="m", study_kind="k")
    contributions = {
        "tasks": ["a", "b", "c", "d"],
        "metrics": {"m": [[0, 1, 1], [1, 1, 1], [2, 0, 1], [3, 1, 2], [3, 0, 1]]},
    }
    units = [
        ("a", 10, "", "yes"),  # reproduces (1, 1): drawn
        ("b", 11, "", "no"),  # the board counts 1 where the judge said no: fixed
        # c: the judge never saw it: fixed 0
        ("d", 13, "x", "yes"),  # d counts (1, 3): one judged unit drawn, two fixed zeros
        ("d", 13, "y", None),  # no label of the judge's: not drawn
    ]
    found = core.population(
        key="m", declared=declared, positive="yes", contributions=contributions, units=units
    )
    assert [(d.row, d.slots, d.judge) for d in found.draws] == [(10, ("",), 1), (13, ("x",), 1)]
    assert sorted(found.fixed) == [0, 0, 0, 1]
    assert found.judge_mean() == pytest.approx(3 / 6)
    per_task = core.CalibratedMetric(metric="m", study_kind="k", unit="task")
    tasks = {"tasks": ["a", "b"], "metrics": {"m": [[0, 1, 1], [1, 0, 1]]}}
    both = core.population(
        key="m",
        declared=per_task,
        positive="yes",
        contributions=tasks,
        units=[
            ("a", 1, "0", "yes"),
            ("a", 1, "1", "yes"),
            ("b", 2, "0", "yes"),
            ("b", 2, "1", "no"),
        ],
    )
    assert [(d.row, d.slots, d.judge) for d in both.draws] == [
        (1, ("0", "1"), 1),
        (2, ("0", "1"), 0),
    ]
    with pytest.raises(core.CalibrationError, match="not a count of 0/1 outcomes"):
        core.population(
            key="m",
            declared=declared,
            positive="yes",
            contributions={"tasks": ["a"], "metrics": {"m": [[0, 0.5, 1]]}},
            units=[],
        )


def test_majority_drops_ties_and_cant_judge():
    assert core.majority(["yes", "yes", "no"], positive="yes") == 1
    assert core.majority(["no", None, None], positive="yes") == 0
    assert core.majority(["yes", "no"], positive="yes") is None
    assert core.majority([None, None], positive="yes") is None
    assert core.majority([], positive="yes") is None


# --- The scores ----------------------------------------------------------------------------


def test_labels_write_the_estimators_values_and_follow_exclusion(
    django_capture_on_commit_callbacks,
):
    board = scored_board()
    with django_capture_on_commit_callbacks(execute=True):
        study = calibration_study(board, per_stratum=12)
    rater = invite(study)
    rows = CalibratedScore.objects.filter(metric=METRIC, judge=board.judge)
    assert set(rows.values_list("labelled", "value")) == {(0, None)}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert rate_everything(rater) == 24
    # 24 labels, one refresh once they are stored (more commits would each queue their own);
    # the scores it writes announce each submission's board change after their own commit.
    refreshes = [c for c in callbacks if hasattr(c, "calibration_study")]
    assert len(refreshes) == 1
    assert rows.count() == 2
    for s_index, submission in enumerate(board.submissions):
        row = rows.get(submission=submission)
        found = expected(board, study, s_index)
        assert (row.study_id, row.study_name) == (study.pk, study.name)
        assert (row.population, row.labelled, row.labels_needed) == (TASKS, 12, 0)
        judge_mean = sum(verdict(s_index, t) for t in range(TASKS)) / TASKS * 100
        assert row.judge_value == pytest.approx(judge_mean, abs=1e-9)
        for field, value in (
            ("value", found.calibrated.value),
            ("low", found.calibrated.low),
            ("high", found.calibrated.high),
            ("classical_value", found.classical.value),
            ("classical_low", found.classical.low),
            ("classical_high", found.classical.high),
            ("bias", found.bias.value),
            ("bias_low", found.bias.low),
            ("bias_high", found.bias.high),
        ):
            assert getattr(row, field) == pytest.approx(value * 100, abs=1e-9), field
        assert row.tuning == pytest.approx(found.tuning, abs=1e-12)
    # The rater excluded: nobody's labels count, no calibrated value, 10 labels needed.
    with django_capture_on_commit_callbacks(execute=True):
        rater_update(rater=rater, is_excluded=True)
    row = rows.get(submission=board.submissions[0])
    assert (row.labelled, row.value, row.labels_needed) == (0, None, core.MIN_LABELLED)
    assert row.judge_value is not None
    with django_capture_on_commit_callbacks(execute=True):
        rater_update(rater=rater, is_excluded=False)
    assert rows.get(submission=board.submissions[0]).value == pytest.approx(
        expected(board, study, 0).calibrated.value * 100, abs=1e-9
    )
    # A rated study is not deleted (close it instead); its scores stay while it exists.
    with pytest.raises(StudyError, match="has ratings"):
        study_delete(study=study)
    assert rows.count() == 2


def test_a_new_calibration_study_writes_its_rows_and_deleting_it_deletes_them(
    django_capture_on_commit_callbacks,
):
    board = scored_board()
    with django_capture_on_commit_callbacks(execute=True):
        study = calibration_study(board, per_stratum=5)
    rows = CalibratedScore.objects.filter(study_id=study.pk)
    assert sorted(rows.values_list("submission_id", "labelled", "labels_needed")) == [
        (s.pk, 0, core.MIN_LABELLED) for s in board.submissions
    ]
    assert rows.filter(value__isnull=True).count() == 2
    study_delete(study=study)
    assert not rows.exists() and not Study.objects.filter(pk=study.pk).exists()


def test_a_revised_label_and_too_few_labels(django_capture_on_commit_callbacks):
    board = scored_board()
    with django_capture_on_commit_callbacks(execute=True):
        study = calibration_study(board, per_stratum=12)
    rater = invite(study)
    with django_capture_on_commit_callbacks(execute=True):
        current = rating.rater_current(rater=rater, start=True)
        rating.assignment_submit(rater=rater, code=current.code, label="consistent")
    row = CalibratedScore.objects.get(submission=current.item.stratum, metric=METRIC)
    assert (row.labelled, row.value, row.labels_needed) == (1, None, core.MIN_LABELLED - 1)
    with django_capture_on_commit_callbacks(execute=True):
        rate_everything(rater, label_of=lambda task_id: "consistent")
    flipped = study.items.filter(stratum=board.submissions[1]).first()
    with django_capture_on_commit_callbacks(execute=True):
        rating.assignment_revise(
            rater=rater, code=flipped.assignments.get().code, label="inconsistent"
        )

    def labels(task_id):
        return (
            "inconsistent" if task_number(task_id) == task_number(flipped.task_id) else "consistent"
        )

    row = CalibratedScore.objects.get(submission=board.submissions[1], metric=METRIC)
    assert row.value == pytest.approx(
        expected(board, study, 1, labels=labels).calibrated.value * 100, abs=1e-9
    )


def test_an_extension_refreshes_the_scores(django_capture_on_commit_callbacks):
    board = scored_board()
    with django_capture_on_commit_callbacks(execute=True):
        study = calibration_study(board, per_stratum=10)
    rater = invite(study)
    with django_capture_on_commit_callbacks(execute=True):
        rate_everything(rater)
    with django_capture_on_commit_callbacks(execute=True):
        calibration_extend(study=study, counts={board.submissions[0].pk: 4})
    row = CalibratedScore.objects.get(submission=board.submissions[0], metric=METRIC)
    assert row.labelled == 10  # the new items are not rated yet
    with django_capture_on_commit_callbacks(execute=True):
        assert rate_everything(rater) == 4
    row.refresh_from_db()
    assert row.labelled == 14
    assert row.value == pytest.approx(expected(board, study, 0).calibrated.value * 100, abs=1e-9)


def test_refresh_of_an_agreement_study_writes_nothing():
    board = scored_board()
    study = make_study(board, slug="agreement", per_stratum=5)
    assert calibration_refresh(study=study) == []
    assert not CalibrationStratum.objects.filter(study=study).exists()


def test_a_calibration_study_needs_a_score_under_its_judge_and_a_matching_kind():
    board = make_board(submissions=2, tasks=TASKS, audio=False)
    with pytest.raises(StudyError, match="no score under judge 'zanzibar'"):
        calibration_study(board)
    for submission in board.submissions:
        submission_aggregate(submission=submission, judge=board.judge)
    with pytest.raises(StudyError, match="calibrated by 'discussion' studies, not 'turnbased'"):
        calibration_study(board, kind="turnbased")
    with pytest.raises(StudyError, match="declares no calibrated metric 'discussion.tt_acc'"):
        make_study(board, calibrated_metric="discussion.tt_acc")


# --- The dashboard and who may extend ------------------------------------------------------


def test_the_dashboard_plans_labels_and_only_staff_or_the_owner_extend(
    django_capture_on_commit_callbacks,
):
    board = scored_board()
    owner = User.objects.create_user("owner", password="pw-owner-1234")
    with django_capture_on_commit_callbacks(execute=True):
        study = calibration_study(board, per_stratum=12)
    Study.objects.filter(pk=study.pk).update(created_by=owner)
    rater = invite(study)
    with django_capture_on_commit_callbacks(execute=True):
        rate_everything(rater)
    staff = User.objects.create_user("staff", password="pw-staff-1234", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'id="calibration-plan"' in page and "Discussion · App Acc" in page
    assert 'value="10"' in page  # the default target width
    cells = re.findall(r'<td class="needed">(\d+)', page)
    assert len(cells) == 2 and all(int(c) > 0 for c in cells)
    wide = client.get(f"/studies/{study.slug}/?width=100").content.decode()
    assert re.findall(r'<td class="needed">(\d+)', wide) == ["0", "0"]
    bad = client.get(f"/studies/{study.slug}/?width=abc").content.decode()
    assert "is not a number" in bad
    url = f"/studies/{study.slug}/extend/"
    items = study.items.count()

    # Anonymous: to the login page; a rater's account: refused; neither adds anything.
    assert Client().post(url, {"width": "30"}).status_code == 302
    account = User.objects.create_user("rater", password="pw-rater-1234")
    rater.user = account
    rater.save(update_fields=["user"])
    other = Client()
    other.force_login(account)
    assert other.post(url, {"width": "30"}).status_code == 403
    assert study.items.count() == items
    # Without the CSRF token the staff's post is refused too.
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff)
    assert strict.post(url, {"width": "30"}).status_code == 403
    assert study.items.count() == items

    # The owner (not staff) extends by what the plan says for that width.
    mine = Client()
    mine.force_login(owner)
    planned = client.get(f"/studies/{study.slug}/?width=30").content.decode()
    # 18 of each submission's 30 units are left to draw.
    need = sum(min(int(c), 18) for c in re.findall(r'<td class="needed">(\d+)', planned))
    assert need > 0
    with django_capture_on_commit_callbacks(execute=True):
        response = mine.post(url, {"width": "30"})
    assert response.status_code == 302
    assert study.items.count() == items + need
    # Staff too.
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url, {"width": "5"}).status_code == 302
    assert study.items.count() > items + need


def test_an_agreement_study_page_says_why_it_does_not_calibrate():
    board = scored_board()
    study = make_study(board, slug="agreement", per_stratum=5, language="")
    staff = User.objects.create_user("staff", password="pw-staff-1234", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'id="not-calibration"' in page and "empty responses skipped" in page
    assert 'id="calibration-plan"' not in page
    assert client.post(f"/studies/{study.slug}/extend/", {"width": "10"}).status_code == 302
    assert study.items.count() == 10


def test_a_metric_no_longer_declared_fails_neither_a_rating_nor_the_page(
    django_capture_on_commit_callbacks,
):
    board = scored_board()
    with django_capture_on_commit_callbacks(execute=True):
        study = calibration_study(board, per_stratum=5)
    Study.objects.filter(pk=study.pk).update(calibrated_metric="discussion.tt_acc")
    study.refresh_from_db()
    rater = invite(study)
    with django_capture_on_commit_callbacks(execute=True):
        assert rate_everything(rater) == 10
    assert calibration_refresh(study=study) == []
    # The rows written before stay as they were.
    assert set(
        CalibratedScore.objects.filter(study_id=study.pk).values_list("labelled", flat=True)
    ) == {0}
    staff = User.objects.create_user("staff", password="pw-staff-1234", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert "cannot be calibrated now" in page and "discussion.tt_acc" in page
