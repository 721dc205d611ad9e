"""Study pages as staff and raters met them, by request: a warning when the sampled submissions
are public, n and small-n marks beside figures, snapshots taken on request and when a study
closes (and the snapshot page with the excluded raters' figures), the same intervals for the same
items, a rater changing an answer within the batch only, gold feedback, and a guideline whose
lines break only between paragraphs."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation import assignment as rating
from annotation.models import Item, Rating, Snapshot
from annotation.services import check_item_add, rater_update
from evaluation.benchmarks.mpbench.plugin import DISCUSSION_GUIDELINE
from tests.annotation.factories import invite, make_board, make_study
from tests.annotation.test_staff_pages import rate_all

pytestmark = pytest.mark.django_db


def test_creating_a_study_on_public_submissions_warns_of_de_blinding(admin_client):
    board = make_board(submissions=2, tasks=4, audio=False)  # published, as on the board
    response = admin_client.post(
        reverse("annotation:study-new"),
        {
            "name": "Blind?",
            "slug": "blind",
            "benchmark": board.benchmark.pk,
            "judge": board.judge.pk,
            "kind": "discussion",
            "strata": [s.pk for s in board.submissions],
            "per_stratum": 2,
            "seed": 0,
            "skip_empty_responses": "on",
            "overlap": 1,
            "batch_size": 4,
            "gold_per_batch": 0,
            "attention_per_batch": 0,
            "lock_minutes": 60,
            "positive_label": "consistent",
            "negative_label": "inconsistent",
            "tie_rule": "drop",
            "guideline_text": DISCUSSION_GUIDELINE,
        },
    )
    assert response.status_code == 302
    # Said once, on the dashboard the form leads to (and on every later visit), not twice.
    page = admin_client.get(response["Location"]).content.decode()
    assert page.count("Raters could de-blind themselves") == 1
    assert 'id="public-strata"' in page
    for submission in board.submissions:
        assert f"#{submission.pk} ({submission.system.name})" in page
    again = admin_client.get(reverse("annotation:study", args=["blind"])).content.decode()
    assert again.count("Raters could de-blind themselves") == 1


def test_figures_carry_n_and_small_n_is_marked(admin_client):
    board = make_board(submissions=1, tasks=3, audio=False)
    study = make_study(board, slug="small", per_stratum=3, overlap=1, batch_size=3)
    rate_all(study, [invite(study)])
    page = admin_client.get(reverse("annotation:study", args=["small"])).content.decode()
    # Three items, one rater each: kappa is against a "majority" of one person on all three.
    assert '<span class="n">n=3</span>' in page
    assert "too few to mean anything" in page
    assert "majority of one rater on 3 of 3" in page
    text = " ".join(page.split())
    assert "1 raters" not in text and "1 items" not in text
    assert "3 ratings" in page and "1 rater who rated, of 1 invited" in " ".join(page.split())


def test_snapshots_on_request_and_when_the_study_closes_with_excluded_figures(admin_client):
    board = make_board(submissions=1, tasks=3, audio=False)
    study = make_study(board, slug="snap", per_stratum=3, overlap=2, batch_size=3)
    first, second = invite(study, 2)
    rate_all(study, [first, second])
    rater_update(rater=second, is_excluded=True)
    for _ in range(3):
        admin_client.get(reverse("annotation:study", args=["snap"]))
    assert Snapshot.objects.count() == 0  # looking stores nothing
    admin_client.post(reverse("annotation:study-status", args=["snap"]), {"status": "closed"})
    snapshot = Snapshot.objects.get()
    page = admin_client.get(reverse("annotation:snapshot", args=["snap", snapshot.sha256]))
    text = page.content.decode()
    without = snapshot.figures["without_excluded"]
    assert without is not None and without["excluded"] == [second.name]
    assert f"Without excluded raters ({second.name})" in text
    assert text.count('class="board figures"') == 4  # two reports, each with its raters table


def test_the_same_items_give_the_same_interval_on_the_dashboard(admin_client):
    board = make_board(submissions=2, tasks=6, audio=False, verdict=lambda s, t: t % 2 == 0)
    study = make_study(board, slug="same", per_stratum=6, overlap=2, batch_size=12)
    raters = invite(study, 2)
    for n, rater in enumerate(raters):
        while (current := rating.rater_current(rater=rater, start=True)) is not None:
            label = "consistent" if (current.position + n) % 3 else "inconsistent"
            rating.assignment_submit(rater=rater, code=current.code, label=label)
    response = admin_client.get(reverse("annotation:study", args=["same"]))
    report = response.context["figures"]["all_raters"]
    assert list(report["by_batch"]) == ["1"]  # one batch holding every rated item
    for name in ("alpha", "kappa", "raw_agreement", "ac1"):
        batch, overall = report["by_batch"]["1"][name], report["overall"][name]
        assert (batch["low"], batch["high"]) == (overall["low"], overall["high"]), name


def test_a_rater_changes_answers_within_the_latest_batch_only(client):
    board = make_board(submissions=2, tasks=4, audio=False)
    study = make_study(board, slug="undo", per_stratum=4, overlap=1, batch_size=2)
    rater = invite(study)
    rate = reverse("annotation:rate", args=[rater.token])
    codes = []
    for _ in range(2):  # two batches of two
        while (current := rating.rater_current(rater=rater, start=True)) is not None:
            codes.append((current.batch.number, current.code))
            rating.assignment_submit(rater=rater, code=current.code, label="consistent")
            if len(codes) % 2 == 0:
                break
    batch_one = [code for number, code in codes if number == 1]
    batch_two = [code for number, code in codes if number == 2]
    page = client.get(rate).content.decode()
    assert f"/rate/{rater.token}/items/{batch_two[1]}/" in page  # "go back" after the batch
    review = client.get(reverse("annotation:rate-review", args=[rater.token, batch_two[0]]))
    state = review.context["page_state"]
    assert state["review"] and state["draftLabel"] == "consistent"
    saved = client.post(
        state["submitUrl"],
        data=json.dumps({"label": "inconsistent", "comment": "misheard", "flagged": True}),
        content_type="application/json",
    )
    assert saved.json() == {"ok": True, "stored": True}
    changed = Rating.objects.get(assignment__code=batch_two[0])
    assert (changed.label, changed.comment, changed.flagged) == ("inconsistent", "misheard", True)
    assert changed.label_changes == 1 and changed.revised_at is not None
    # An earlier batch is closed to changes.
    old = client.post(
        reverse("annotation:rate-revise", args=[rater.token, batch_one[0]]),
        data=json.dumps({"label": "inconsistent"}),
        content_type="application/json",
    )
    assert old.status_code == 400 and "current batch" in old.json()["error"]
    assert (
        client.get(reverse("annotation:rate-review", args=[rater.token, batch_one[0]])).status_code
        == 302
    )


def test_gold_items_say_what_was_expected_after_the_answer(client):
    board = make_board(submissions=2, tasks=4, audio=False)
    study = make_study(board, slug="gold", per_stratum=1, overlap=1, batch_size=2, gold_per_batch=1)
    used = Item.objects.filter(study=study).values_list("task_result", flat=True)
    spare = (
        board.submissions[1]
        .task_results.exclude(pk__in=used)
        .filter(task__spec__family="discussion")[0]
    )
    check_item_add(
        study=study,
        role=Item.Role.GOLD,
        submission=board.submissions[1],
        task_id=spare.task.task_id,
        expected_label="inconsistent",
    )
    rater = invite(study)
    answers = {}
    while (current := rating.rater_current(rater=rater, start=True)) is not None:
        response = client.post(
            reverse("annotation:rate-submit", args=[rater.token, current.code]),
            data=json.dumps({"label": "consistent"}),
            content_type="application/json",
        )
        answers[current.item.role] = response.json()["feedback"]
    assert answers[Item.Role.SAMPLE] is None
    assert answers[Item.Role.GOLD] == {
        "expected": "inconsistent",
        "given": "consistent",
        "correct": False,
    }


def test_every_kinds_guideline_breaks_lines_only_between_paragraphs():
    from evaluation.benchmarks import registry
    from evaluation.benchmarks.base import kind_guideline

    assert DISCUSSION_GUIDELINE.count("\n\n") == 3
    for plugin in registry().values():
        for kind in plugin.study_kinds:
            guideline = kind_guideline(kind)
            for paragraph in guideline.split("\n\n"):
                assert "\n" not in paragraph, (plugin.slug, kind.key)
