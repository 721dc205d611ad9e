"""Judges as first-class: staff add a judge and re-score every submission with it in the
background; the board switches judges; the agreement view's raw agreement and Cohen's kappa
match scikit-learn over the items both judges decided, counting only visible submissions. On
the example plug-in (tests/toyplugin), with a release of more tasks than its default six, so an
agreement counts enough items; each task is graded twice (two slots of one kind)."""

import hashlib
import json
import re

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from sklearn.metrics import cohen_kappa_score

from evaluation.models import (
    Judge,
    Judgment,
    Membership,
    Score,
    Submission,
    TaskJudgment,
    Team,
)
from evaluation.selectors import submissions_visible_to
from evaluation.services import benchmark_import, submission_aggregate, submission_create
from leaderboard.selectors import judge_agreement
from tests.conftest import completion
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

KINDS = ["grade"]
TASKS = 30  # the release's tasks: the public run answers all, 60 grades (two a task)


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


@pytest.fixture
def people(db):
    lab = Team.objects.create(name="Lab", slug="lab")
    users = {
        "staff": User.objects.create_user("sam", password="pw", is_staff=True),
        "member": User.objects.create_user("bob", password="pw"),
        "outsider": User.objects.create_user("carol", password="pw"),
    }
    Membership.objects.create(team=lab, user=users["member"])
    return lab, users


def hashed_verdict(body, call):
    """A second judge that disagrees with the offline one now and then, deterministically: a
    grade of 0 or 1 from the prompt's hash (the style grades pass more often)."""
    prompt = body["messages"][0]["content"]
    verdict = int(hashlib.sha256(prompt.encode()).hexdigest()[:4], 16) % 3 != 0
    if "Grade the style" in prompt:
        verdict = int(hashlib.sha256(prompt.encode()).hexdigest()[4:8], 16) % 5 != 0
    return 200, {}, completion(json.dumps({"score": 1.0 if verdict else 0.0}))


@pytest.fixture
def toybench(db, settings, tmp_path):
    """The example plug-in registered and a release of TASKS tasks imported as toy-bench."""
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    toy.write_release(tmp_path / "release", count=TASKS)
    return benchmark_import(
        slug="toy-bench", directory=tmp_path / "release", plugin="toy-bench", name="Toy-Bench"
    ).benchmark


@pytest.fixture
def two_runs(eager, toybench, tmp_path, people):
    """Two runs scored by the offline judge: one published answering every task, one team
    draft answering the first 20; each with some answers right and some wrong."""
    lab, _ = people
    offline = toybench.judges.get(slug="offline")
    made = {}
    for name, correct, skip, publish, team in (
        ("Public Agent", 20, 0, True, None),
        ("Draft Agent", 8, 10, False, lab),
    ):
        path = tmp_path / f"{name.replace(' ', '')}.jsonl"
        toy.write_answers(path, correct=correct, skip=skip, count=TASKS, seed=len(name))
        submission = submission_create(
            benchmark=toybench,
            bundle_path=path,
            system_name=name,
            judge=offline,
            allow_partial=True,
            publish=publish,
            team=team,
        )
        submission.refresh_from_db()
        assert submission.status == Submission.Status.SCORED, submission.error
        made[name] = submission
    return made


def add_judge_form(url: str, slug: str = "second", **extra) -> dict:
    data = {
        "slug": slug,
        "name": "Second opinion",
        "provider": "openai",
        "base_url": url,
        "send_sampling_params": "on",
        "concurrency": "4",
        # A local judge costs nothing; priced at 0, the spending limits let it judge.
        "price_input_per_mtok": "0",
        "price_output_per_mtok": "0",
        **{f"model_{kind}": "judge-model-x" for kind in KINDS},
    }
    data.update(extra)
    return data


def test_judge_management_is_staff_only(client, toybench, people, judge_server):
    _, users = people
    manage = "/benchmarks/toy-bench/judges/manage/"
    rescore = "/benchmarks/toy-bench/judges/offline/rescore/"
    response = client.get(manage)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.post(rescore).status_code == 302
    assert client.post(manage, add_judge_form(judge_server.url)).status_code == 302
    for name in ("member", "outsider"):
        client.force_login(users[name])
        assert client.get(manage).status_code == 403
        assert client.post(manage, add_judge_form(judge_server.url)).status_code == 403
        assert client.post(rescore).status_code == 403
        client.logout()
    assert not Judge.objects.filter(slug="second").exists()
    client.force_login(users["staff"])
    page = client.get(manage)
    assert page.status_code == 200
    for field in (
        "provider",
        "base_url",
        "send_sampling_params",
        "concurrency",
        "model_grade",
    ):
        assert f'name="{field}"' in page.content.decode()
    assert client.get(rescore).status_code == 405  # re-scoring is a POST
    # The agreement view itself is public; it links to management for staff only.
    client.logout()
    assert "judges/manage" not in client.get("/benchmarks/toy-bench/judges/").content.decode()


def test_adding_a_judge_validates_and_names_problems(client, toybench, people, judge_server):
    _, users = people
    client.force_login(users["staff"])
    manage = "/benchmarks/toy-bench/judges/manage/"
    missing = client.post(manage, add_judge_form(judge_server.url, model_grade=""))
    assert missing.status_code == 400
    assert "missing: grade" in missing.content.decode()
    taken = client.post(manage, add_judge_form(judge_server.url, slug="offline"))
    assert taken.status_code == 400 and "already has a judge named" in taken.content.decode()
    assert client.post(manage, add_judge_form("not a url")).status_code == 400

    done = client.post(manage, add_judge_form(judge_server.url), follow=True)
    assert "Judge second added." in done.content.decode()
    judge = Judge.objects.get(benchmark=toybench, slug="second")
    assert judge.provider == "openai" and judge.base_url == judge_server.url
    assert judge.models_by_kind == {kind: "judge-model-x" for kind in KINDS}
    assert judge.concurrency == 4 and judge.send_sampling_params is True
    assert not judge.is_official

    offline = client.post(
        manage,
        add_judge_form("", slug="offline-2", provider="offline", send_sampling_params=""),
    )
    assert offline.status_code == 302
    assert Judge.objects.get(slug="offline-2").models_by_kind == {}


def _independent_pairs(benchmark, user, slug_a: str, slug_b: str):
    """(verdict of A, verdict of B) for every (task result, kind, slot) both decided, read
    straight from the stored judgments."""
    visible = submissions_visible_to(user=user).filter(benchmark=benchmark).values("pk")

    def verdicts(slug):
        rows = TaskJudgment.objects.filter(
            judge__slug=slug,
            judge__benchmark=benchmark,
            task_result__submission__in=visible,
            judgment__isnull=False,
        ).values_list("task_result_id", "kind", "slot", "judgment__verdict")
        return {(r, k, slot): v for r, k, slot, v in rows if v is not None}

    a, b = verdicts(slug_a), verdicts(slug_b)
    keys = sorted(set(a) & set(b))
    return [a[k] for k in keys], [b[k] for k in keys]


def test_rescore_with_a_new_judge_switches_board_and_agreement_matches_sklearn(
    client, toybench, people, two_runs, judge_server
):
    _, users = people
    judge_server.responder = hashed_verdict
    client.force_login(users["staff"])
    manage = "/benchmarks/toy-bench/judges/manage/"
    assert client.post(manage, add_judge_form(judge_server.url)).status_code == 302
    second = Judge.objects.get(slug="second")

    done = client.post("/benchmarks/toy-bench/judges/second/rescore/", follow=True)
    assert "2 submission(s) queued for re-scoring with second." in done.content.decode()
    assert judge_server.requests, "the second judge was never called"
    assert {r["model"] for r in judge_server.requests} == {"judge-model-x"}
    assert Score.objects.filter(judge=second).count() == 2
    # The submissions keep their own judge and status; the new judge's scores sit beside.
    for submission in two_runs.values():
        submission.refresh_from_db()
        assert submission.judge.slug == "offline" and submission.status == "scored"

    # The board switches judges.
    staff_board = client.get("/api/benchmarks/toy-bench/leaderboard/?judge=second").json()
    assert {e["system"] for e in staff_board["entries"]} == {"Public Agent", "Draft Agent"}
    assert {e["judge"] for e in staff_board["entries"]} == {"second"}
    assert staff_board["judges"] == ["official", "offline", "second"]
    page = client.get("/benchmarks/toy-bench/?judge=second").content.decode()
    assert '<option value="second" selected>Second opinion</option>' in page
    client.logout()
    public_board = client.get("/api/benchmarks/toy-bench/leaderboard/?judge=second").json()
    assert [e["system"] for e in public_board["entries"]] == ["Public Agent"]

    # Agreement: per viewer, over the submissions that viewer may see.
    for viewer in (None, users["staff"], users["member"], users["outsider"]):
        a, b = _independent_pairs(toybench, viewer, "offline", "second")
        assert len(a) > 50 and len(set(a)) == 2 and len(set(b)) == 2
        pairs = judge_agreement(benchmark=toybench, user=viewer)
        pair = next(p for p in pairs if {p.judge_a.slug, p.judge_b.slug} == {"offline", "second"})
        if pair.judge_a.slug == "second":
            a, b = b, a
        assert pair.overall.items == len(a)
        assert pair.overall.raw == pytest.approx(
            sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
        )
        assert pair.overall.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert pair.submissions == (2 if viewer in (users["staff"], users["member"]) else 1)
        assert sum(k.items for k in pair.by_kind.values()) == len(a)

        client.logout()
        if viewer is not None:
            client.force_login(viewer)
        html = client.get("/benchmarks/toy-bench/judges/").content.decode()
        row = re.search(
            r'<tr class="pair" data-pair="offline/second">(.*?)</tr>', html, re.S
        ).group(1)
        assert f"<td>{len(a)}</td>" in row
        assert f"{100 * sum(x == y for x, y in zip(a, b, strict=True)) / len(a):.1f}%" in row
        assert f"{cohen_kappa_score(a, b):.3f}" in row

    staff_items = judge_agreement(benchmark=toybench, user=users["staff"])
    public_items = judge_agreement(benchmark=toybench, user=None)
    pick = lambda pairs: next(  # noqa: E731
        p for p in pairs if {p.judge_a.slug, p.judge_b.slug} == {"offline", "second"}
    )
    assert pick(staff_items).overall.items > pick(public_items).overall.items

    # Per kind: each kind's kappa against scikit-learn too.
    pair = pick(staff_items)
    for kind, result in pair.by_kind.items():
        rows = {
            slug: {
                (row, slot): verdict
                for row, slot, verdict in TaskJudgment.objects.filter(
                    judge__slug=slug, kind=kind, judgment__verdict__isnull=False
                ).values_list("task_result_id", "slot", "judgment__verdict")
            }
            for slug in ("offline", "second")
        }
        keys = sorted(set(rows["offline"]) & set(rows["second"]))
        first, other = (
            ("offline", "second") if pair.judge_a.slug == "offline" else ("second", "offline")
        )
        x = [rows[first][k] for k in keys]
        y = [rows[other][k] for k in keys]
        assert result.items == len(keys)
        if len(set(x)) > 1 or len(set(y)) > 1:
            assert result.kappa == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)

    # The cached view follows a changed verdict once the score is recomputed.
    client.logout()
    client.force_login(users["staff"])
    before = client.get("/benchmarks/toy-bench/judges/").content.decode()
    link = (
        TaskJudgment.objects.filter(judge=second, judgment__verdict__isnull=False)
        .select_related("judgment", "task_result__submission")
        .first()
    )
    Judgment.objects.filter(pk=link.judgment_id).update(verdict=not link.judgment.verdict)
    submission_aggregate(submission=link.task_result.submission, judge=second)
    a, b = _independent_pairs(toybench, users["staff"], "offline", "second")
    after = client.get("/benchmarks/toy-bench/judges/").content.decode()
    assert after != before
    assert f"{cohen_kappa_score(a, b):.3f}" in after


def test_agreement_page_with_one_pair_and_no_overlap(client, toybench):
    page = client.get("/benchmarks/toy-bench/judges/").content.decode()
    assert 'data-pair="official/offline"' in page  # the official judge first
    assert "no item judged by both" in page
    assert client.get("/benchmarks/nope/judges/").status_code == 404
