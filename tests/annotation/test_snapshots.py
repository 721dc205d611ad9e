"""Frozen snapshots: the figures a study reports, from exactly the ratings stored with them,
checked against krippendorff and scikit-learn called here on the same labels."""

from __future__ import annotations

import hashlib
import json

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation import assignment as rating
from annotation.figures import compute
from annotation.models import Snapshot
from annotation.services import rater_update, snapshot_freeze
from tests.annotation.factories import invite, make_board, make_study

pytestmark = pytest.mark.django_db

C, N, M = "consistent", "inconsistent", "missing"
# Judge verdicts (task n: True when n is even) and three raters' answers per task.
JUDGE = {0: C, 1: N, 2: C, 3: N}
ANSWERS = {
    0: (C, C, C),  # majority C, judge C
    1: (N, N, C),  # majority N, judge N
    2: (N, N, N),  # majority N, judge C
    3: (C, N, M),  # a tie (one each, one can't judge)
}


def rated_study(tie_rule="drop"):
    board = make_board(submissions=1, tasks=4, audio=False, verdict=lambda s, t: t % 2 == 0)
    study = make_study(board, per_stratum=4, overlap=3, batch_size=4, tie_rule=tie_rule)
    raters = invite(study, 3)
    for k, rater in enumerate(raters):
        while (current := rating.rater_current(rater=rater, start=True)) is not None:
            n = int(current.item.task_id.rsplit("-", 1)[1])
            rating.assignment_submit(rater=rater, code=current.code, label=ANSWERS[n][k])
    return study, raters


def reliability_data(rater_indexes):
    codes = {C: 0, N: 1, M: np.nan}
    return np.array([[codes[ANSWERS[n][k]] for n in range(4)] for k in rater_indexes], float)


def canonical(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_figures_match_independent_computations_and_ties_are_dropped():
    study, _ = rated_study("drop")
    figures = snapshot_freeze(study=study).figures["all_raters"]["overall"]
    alpha = krippendorff.alpha(
        reliability_data=reliability_data(range(3)), level_of_measurement="nominal"
    )
    assert figures["alpha"]["value"] == pytest.approx(alpha)
    # Task 3 ties and is dropped: judge vs majority over tasks 0-2.
    kappa = cohen_kappa_score([C, N, C], [C, N, N])
    assert figures["kappa"]["value"] == pytest.approx(kappa)
    assert figures["raw_agreement"]["value"] == pytest.approx(2 / 3)
    assert (figures["judged"], figures["ties"]) == (4, 1)
    # Judge rows x majority columns, labels in study order (consistent, inconsistent).
    assert figures["confusion"] == [[1, 1], [0, 1]]
    low, high = figures["kappa"]["low"], figures["kappa"]["high"]
    assert low is not None and low <= figures["kappa"]["value"] <= high


def test_the_disagree_tie_rule_counts_a_tie_against_the_judge():
    study, _ = rated_study("disagree")
    figures = snapshot_freeze(study=study).figures["all_raters"]["overall"]
    # Task 3: judge says inconsistent, so the tie counts as consistent.
    assert figures["kappa"]["value"] == pytest.approx(cohen_kappa_score([C, N, C, N], [C, N, N, C]))
    assert figures["confusion"] == [[1, 1], [1, 1]]


def test_figures_without_an_excluded_rater_are_reported_beside_all_raters():
    study, raters = rated_study()
    rater_update(rater=raters[2], is_excluded=True)
    frozen = snapshot_freeze(study=study).figures
    without = frozen["without_excluded"]["overall"]
    alpha = krippendorff.alpha(
        reliability_data=reliability_data([0, 1]), level_of_measurement="nominal"
    )
    assert without["alpha"]["value"] == pytest.approx(alpha)
    assert frozen["without_excluded"]["excluded"] == [raters[2].name]
    assert frozen["all_raters"]["overall"]["raters"] == 3 and without["raters"] == 2


def test_a_snapshot_is_the_exact_ratings_with_a_checkable_hash_and_is_reused_until_they_change():
    study, raters = rated_study()
    first = snapshot_freeze(study=study)
    assert snapshot_freeze(study=study).pk == first.pk
    stored = Snapshot.objects.get(pk=first.pk)  # as read back from the database
    digest = hashlib.sha256(
        canonical(
            {"ratings": stored.ratings, "parameters": stored.parameters, "figures": stored.figures}
        )
    ).hexdigest()
    assert digest == stored.sha256
    assert stored.rating_count == len(stored.ratings) == 12
    assert {(r["rater"], r["label"]) for r in stored.ratings if r["task_id"].endswith("-003")} == {
        (raters[0].pk, C),
        (raters[1].pk, N),
        (raters[2].pk, None),
    }
    # The figures can be recomputed from the snapshot alone.
    assert (
        json.loads(json.dumps(compute(ratings=stored.ratings, parameters=stored.parameters)))
        == stored.figures
    )
    rater_update(rater=raters[0], is_excluded=True)
    assert snapshot_freeze(study=study).pk != first.pk  # other parameters of the figures


def test_degenerate_studies_report_undefined_with_a_reason():
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    empty = snapshot_freeze(study=study).figures["all_raters"]["overall"]
    assert empty["alpha"]["value"] is None and empty["alpha"]["reason"] == "no ratings"
    rater = invite(study)
    while (current := rating.rater_current(rater=rater, start=True)) is not None:
        rating.assignment_submit(rater=rater, code=current.code, label=C)
    single = snapshot_freeze(study=study).figures["all_raters"]["overall"]
    assert single["alpha"]["value"] is None
    assert "only one rater" in single["alpha"]["reason"]
