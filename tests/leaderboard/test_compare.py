"""Comparing two systems through the real pipeline (offline judge) on the example plug-in's
benchmark (toy-bench): A answers q1 to q3 as toy_upload does, B gives an empty answer to each.
B fails every unit, so McNemar's b is the number of units A passed (read from A's stored
answers and grades by the toy's rules), c is 0, and with three tasks there is no test. A third,
unpublished system must never be comparable by anyone outside its team. MP-Bench's own units
are compared in tests/benchmarks/mpbench/test_compare.py."""

import json

import pytest
from django.core.cache import cache
from django.urls import reverse

from evaluation.models import Score, Submission, System, TaskJudgment
from tests.conftest import scoring_here, toy_upload
from tests.leaderboard.cast import lab_submit
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db

SUBMITTED = ("q1", "q2", "q3")  # the tasks toy_upload answers


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def make_runs(benchmark, folder, people) -> dict[str, Submission]:
    """Through the real pipeline (offline judge): Talker answering as toy_upload does (q1 and
    q2 right, q3 wrong, q4 to q6 missing), Mute giving an empty answer to the same three
    tasks (both published), and an unpublished Secret answering as Talker, all of team Lab."""
    silent = folder / "silent.jsonl"
    silent.write_text("".join(json.dumps({"id": t, "answer": ""}) + "\n" for t in SUBMITTED))

    def submit(name: str, bundle, *, publish: bool) -> Submission:
        return lab_submit(benchmark, bundle, name=name, people=people, publish=publish)

    return {
        "a": submit("Talker", toy_upload(folder / "talker.zip"), publish=True),
        "b": submit("Mute", silent, publish=True),
        "secret": submit("Secret", toy_upload(folder / "secret.zip"), publish=False),
    }


@pytest.fixture(scope="module")
def shared_runs(shared_toybench, tmp_path_factory, shared_people):
    with scoring_here():
        return make_runs(shared_toybench, tmp_path_factory.mktemp("runs"), shared_people)


def passed_units(submission: Submission) -> dict[str, dict[str, bool]]:
    """Each submitted task's units on the board's split (English: q1 to q3 are English), by
    the toy's rules written out here: answered is a non-empty answer; quality is the mean of
    the task's two grades, passed when both are 1."""
    units = {}
    for row in submission.task_results.select_related("task"):
        if not row.data:
            continue  # left out of the upload: not compared
        scores = [
            (link.judgment.output if link.judgment else link.fixed)["score"]
            for link in TaskJudgment.objects.filter(task_result=row).select_related("judgment")
        ]
        assert len(scores) == 2, scores  # accuracy and style
        units[row.task.task_id] = {
            "en.quality": sum(scores) / 2 == 1,
            "en.answered": bool(row.data["answer"].strip()),
        }
    return units


def compare_url(a, b, **extra):
    query = "&".join(f"{k}={v}" for k, v in {"a": a.pk, "b": b.pk, **extra}.items())
    return f"{reverse('api-benchmark-compare', args=['toy-bench'])}?{query}"


def counted_by_hand(body: dict, expected_a: dict, expected_b: dict) -> dict:
    """Check a comparison of three tasks (A passing some units, B none) against the units
    counted by hand, task by task: each metric's counts, the disagreements, and every slice
    cell's difference and n; returns its metrics by key."""
    assert not any(ok for found in expected_b.values() for ok in found.values()), expected_b
    assert any(ok for found in expected_a.values() for ok in found.values())
    assert body["overall"]["tasks"] == 3
    assert (body["a"]["tasks"], body["b"]["tasks"]) == (3, 3)
    metrics = {m["key"]: m for m in body["overall"]["metrics"]}
    for key in {k for found in expected_a.values() for k in found}:
        passed = sum(found.get(key, False) for found in expected_a.values())
        units = sum(key in found for found in expected_a.values())
        m = metrics[key]
        assert (m["b_only_a"], m["c_only_b"], m["units_a"]) == (passed, 0, units), key
        assert m["tasks"] == units, key  # one unit per task
        # At most three tasks: fewer than the six an exact test needs to reach p < 0.05, so
        # no test, no p-value, no interval, and the note says why.
        assert (m["test"], m["p_value"], m["interval"]) == ("", None, None), key
        assert m["note"].startswith(f"n = {units} task"), key
        assert m["a"] == round(100 * passed / units, 2) and m["b"] == 0.0
        assert m["difference"] == pytest.approx(100 * passed / units)
    # The tasks where A passed a unit B failed are the disagreements.
    disagreeing = sorted(t for t, found in expected_a.items() if any(found.values()))
    assert [d["task_id"] for d in body["disagreements"]] == disagreeing
    # Every slice cell has its difference and its n (its test below the minimum n: none).
    for chosen in body["by_slice"]:
        for m in chosen["metrics"]:
            if m["a"] is not None and m["b"] is not None:
                assert m["difference"] is not None, (chosen["slice"], m["key"])
                assert 0 < m["tasks"] <= chosen["tasks"], (chosen["slice"], m["key"])
                assert m["p_value"] is None and "n = " in m["note"]
    return metrics


def test_comparison_counts_and_tests_by_hand(client, runs):
    a, b = runs["a"], runs["b"]
    expected_a = passed_units(a)
    expected_b = passed_units(b)
    # By hand: q1 and q2 answered right (both units), q3 answered wrong (answered only).
    assert expected_a == {
        "q1": {"en.quality": True, "en.answered": True},
        "q2": {"en.quality": True, "en.answered": True},
        "q3": {"en.quality": False, "en.answered": True},
    }
    response = client.get(compare_url(a, b))
    assert response.status_code == 200, response.content
    body = response.json()
    counted_by_hand(body, expected_a, expected_b)
    assert [d["task_id"] for d in body["disagreements"]] == ["q1", "q2", "q3"]
    # Topics of the three: q1 and q3 math, q2 fact.
    assert {s["slice"]: s["tasks"] for s in body["by_slice"]} == {"topic=math": 2, "topic=fact": 1}


def test_slice_limits_the_tasks_and_unknown_slices_are_named(client, runs):
    a, b = runs["a"], runs["b"]
    body = client.get(compare_url(a, b, slice="topic=fact")).json()
    assert body["overall"]["slice"] == "topic=fact"
    assert body["overall"]["tasks"] == 1  # q2, the one fact task both submitted
    assert body["by_slice"] == []
    counted = {m["key"]: (m["units_a"], m["b_only_a"]) for m in body["overall"]["metrics"]}
    assert counted == {"en.quality": (1, 1), "en.answered": (1, 1)}
    response = client.get(compare_url(a, b, slice="topic=karaoke"))
    assert response.status_code == 400
    assert "topic has no value 'karaoke'" in response.json()["detail"]
    response = client.get(compare_url(a, b, slice="colour=red"))
    assert "no attribute 'colour'" in response.json()["detail"]


@pytest.mark.parametrize("viewer", ["anonymous", "outsider", "teammate", "staff"])
def test_private_submissions_are_never_compared_for_outsiders(client, people, runs, viewer):
    _, users = people
    if viewer != "anonymous":
        client.force_login(users[viewer])
    may_see = viewer in ("teammate", "staff")
    a, secret = runs["a"], runs["secret"]
    api = client.get(compare_url(a, secret))
    page = client.get(reverse("compare", args=["toy-bench"]) + f"?a={a.pk}&b={secret.pk}")
    task = client.get(
        reverse("compare-task", args=["toy-bench", "q1"]) + f"?a={a.pk}&b={secret.pk}"
    )
    missing = client.get(compare_url(a, Submission(pk=987654)))
    if may_see:
        assert api.status_code == 200 and page.status_code == 200 and task.status_code == 200
        assert "Secret" in page.content.decode()
    else:
        # The same answer as for a submission that does not exist.
        assert api.status_code == page.status_code == task.status_code == 400
        assert api.json()["detail"].replace(str(secret.pk), "N") == missing.json()[
            "detail"
        ].replace("987654", "N")
        for response in (page, task):
            assert b"Secret" not in response.content
        # Nor is it offered in the page's pickers.
        picker = client.get(reverse("compare", args=["toy-bench"])).content.decode()
        assert "Secret" not in picker and "Talker" in picker


def test_compare_page_and_side_by_side_task(client, runs):
    a, b = runs["a"], runs["b"]
    page = client.get(reverse("compare", args=["toy-bench"]) + f"?a={a.pk}&b={b.pk}")
    html = page.content.decode()
    assert page.status_code == 200
    assert "3 tasks both were scored on count" in html
    assert 'id="disagreement-table"' in html and 'id="slice-table"' in html
    task_id = "q1"
    side = client.get(
        reverse("compare-task", args=["toy-bench", task_id]) + f"?a={a.pk}&b={b.pk}&judge=offline"
    )
    text = side.content.decode()
    assert side.status_code == 200
    assert 'id="side-a"' in text and 'id="side-b"' in text
    assert "Talker" in text and "Mute" in text
    # Both sides show the comparison judge's judgments.
    assert text.count("Offline") >= 2 or text.count("offline") >= 2


def test_ticking_two_rows_on_the_board_compares_them(client, runs):
    a, b = runs["a"], runs["b"]
    url = reverse("compare", args=["toy-bench"])
    ticked = client.get(f"{url}?judge=offline&pick={a.pk}&pick={b.pk}")
    # The permalink names them as a and b, and keeps the rest of the query.
    assert ticked.status_code == 302
    assert ticked["Location"] == f"{url}?judge=offline&a={a.pk}&b={b.pk}"
    page = client.get(ticked["Location"])
    assert page.status_code == 200 and 'id="compare-table"' in page.content.decode()
    # One ticked: it is A, and B is chosen on the compare page.
    one = client.get(f"{url}?pick={a.pk}")
    assert one.status_code == 302 and one["Location"] == f"{url}?a={a.pk}"
    three = client.get(f"{url}?pick={a.pk}&pick={b.pk}&pick={a.pk}")
    assert three.status_code == 400
    assert "tick exactly two rows to compare (3 ticked)" in three.content.decode()


def test_scores_carry_contributions_and_slices(runs):
    score = Score.objects.get(submission=runs["a"], judge__slug="offline")
    assert score.contributions["tasks"] == sorted(score.contributions["tasks"])
    assert set(score.slices["values"]) == {"topic=math", "topic=fact"}
    # A partial bundle is scored on every task (the missing ones count as wrong), so are its
    # slices; a comparison counts only the tasks both submitted. Math: q1, q3 and q5.
    math = sum(task["topic"] == "math" for task in toy.TASKS)
    assert score.slices["values"]["topic=math"]["tasks"] == math == 3
    assert len(score.contributions["tasks"]) - len(score.contributions["absent"]) == 3


def test_the_rendered_comparison_is_reused_and_follows_a_rename(client, runs):
    a, b = runs["a"], runs["b"]
    url = f"{reverse('compare', args=['toy-bench'])}?a={a.pk}&b={b.pk}"
    first = client.get(url).content.decode()
    assert first == client.get(url).content.decode()
    System.objects.filter(pk=a.system_id).update(name="Talker Two")
    renamed = client.get(url).content.decode()
    assert "Talker Two" in renamed.split('id="compare-summary"')[1].split("</p>")[0]
