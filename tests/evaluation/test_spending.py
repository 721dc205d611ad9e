"""Judge spending: the estimate made before judging is queued, the monthly limits per team and
over the site, and what was spent, on the toy benchmark (tests/toyplugin) against a local judge
server. Every expected number is counted here by hand from the toy's prompt template:

    "Grade the {aspect} of this answer.\\nQuestion: {question}\\nAnswer: {answer}\\n"

For task q1 answered "It is 2": "Grade the accuracy of this answer.\\n" is 35 characters,
"Question: What is 1 plus 1?\\n" 28, "Answer: It is 2\\n" 16 — 79 for the accuracy grade; the style
grade is 3 characters shorter ("style" against "accuracy"): 76. Every toy question "What is i
plus i?" has 17 characters for i = 1..6, so any answer of 7 characters gives 79 + 76 = 155 per
task. The toy's one judge kind ("grade") asks for a JSON object (no schema sent), allows two
answer attempts, and budgets the default 1,000 output tokens per call.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from evaluation.models import (
    Judge,
    JudgeCharge,
    Judgment,
    Membership,
    Score,
    SpendEstimate,
    Submission,
    Team,
)
from evaluation.services import failed_judgments_retry, submission_create, submission_resume
from evaluation.services.pipeline import SPEND_HELD, SPEND_STOPPED, SPEND_UNPRICED
from tests.conftest import completion
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

PRICE_IN, PRICE_OUT = Decimal("2.50"), Decimal("10.00")


def cost(tokens_in: int, tokens_out: int) -> Decimal:
    return (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1_000_000


@pytest.fixture
def toy_judge(settings, tmp_path, judge_server):
    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    # Limits under test are set by each test; none by default here.
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0
    settings.MAX_JUDGE_SPEND_PER_MONTH_SITE = 0
    toy.write_release(tmp_path / "release")
    call_command("import_benchmark", "toy-bench", str(tmp_path / "release"), stdout=io.StringIO())
    judge = Judge.objects.get(benchmark__slug="toy-bench", is_official=True)
    judge.base_url = judge_server.url
    judge.price_input_per_mtok = PRICE_IN
    judge.price_output_per_mtok = PRICE_OUT
    judge.save()
    judge_server.responder = lambda body, call: (
        200,
        {},
        completion(
            json.dumps({"score": 1.0, "why": "fine"}), prompt_tokens=100, completion_tokens=5
        ),
    )
    return judge


@pytest.fixture
def people(db):
    team = Team.objects.create(name="Owners", slug="owners")
    others = Team.objects.create(name="Others", slug="others")
    owner = User.objects.create_user("owner", password="pw")
    outsider = User.objects.create_user("outsider", password="pw")
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    Membership.objects.create(team=others, user=outsider, role=Membership.Role.OWNER)
    return team, others, owner, outsider, staff


def submit(judge, tmp_path, answers: dict[str, str], *, team, name="Toy", publish=False):
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": k, "answer": v}) + "\n" for k, v in answers.items()))
    submission = submission_create(
        benchmark=judge.benchmark,
        bundle_path=path,
        system_name=name,
        judge=judge,
        team=team,
        allow_partial=True,
        publish=publish,
    )
    submission.refresh_from_db()
    return submission


def charge(*, team, usd: str, when=None):
    """Spending made earlier (another submission's calls)."""
    JudgeCharge.objects.create(
        team=team, cost_usd=Decimal(usd), charged_at=when or timezone.now(), calls=1
    )


# --- The estimate ---------------------------------------------------------------------------


def test_estimate_of_a_small_submission(eager, toy_judge, people, tmp_path, judge_server):
    team = people[0]
    # Two answered tasks, four missing: the missing ones are decided without a call.
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team)
    assert run.status == "scored", run.error
    estimate = SpendEstimate.objects.get(submission=run, judge=toy_judge)
    # 2 tasks x 2 grades; 155 characters per task -> 310 / 4 = 77.5 -> 78 input tokens.
    assert estimate.calls == 4
    assert estimate.calls_at_most == 8  # two answer attempts each
    assert estimate.input_tokens == 78
    assert estimate.output_tokens == 4 * 1000
    assert estimate.cost_usd == Decimal("0.040195")  # (78 * 2.5 + 4000 * 10) / 1e6
    assert estimate.by_kind == {"grade": {"calls": 4, "input_tokens": 78, "output_tokens": 4000}}
    assert estimate.state == "done"
    assert len(judge_server.requests) == 4


def test_cache_hits_are_not_in_the_estimate(eager, toy_judge, people, tmp_path, judge_server):
    team = people[0]
    submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team, name="A")
    # q1's two grades are in the cache; q3's are new: 155 characters -> 38.75 -> 39 tokens.
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q3": "It is 6"}, team=team, name="B")
    estimate = SpendEstimate.objects.get(submission=run, judge=toy_judge)
    assert (estimate.calls, estimate.input_tokens, estimate.output_tokens) == (2, 39, 2000)
    assert estimate.cost_usd == Decimal("0.0200975")
    assert len(judge_server.requests) == 6


def test_another_teams_identical_requests_are_asked_and_charged_again(
    eager, toy_judge, people, tmp_path, judge_server
):
    """The cache-hit oracle: were another team's private judgments shared, the estimate and the
    charges of an identical upload would say that someone sent the same answers."""
    team, others = people[0], people[1]
    answers = {"q1": "It is 2", "q2": "It is 4"}
    theirs = submit(toy_judge, tmp_path, answers, team=team, name="Theirs")
    ours = submit(toy_judge, tmp_path, answers, team=others, name="Ours")
    assert ours.status == "scored", ours.error
    # As test_estimate_of_a_small_submission counts it: 4 calls, 78 input tokens.
    for run in (theirs, ours):
        estimate = SpendEstimate.objects.get(submission=run, judge=toy_judge)
        assert (estimate.calls, estimate.input_tokens, estimate.output_tokens) == (4, 78, 4000)
        charged = JudgeCharge.objects.filter(submission=run)
        assert sum(c.calls for c in charged) == 4
        assert sum(c.cost_usd for c in charged) == 4 * cost(100, 5)
    assert len(judge_server.requests) == 8
    mine = Judgment.objects.filter(uses__task_result__submission=ours)
    assert mine.count() == 4
    assert not mine.filter(uses__task_result__submission=theirs).exists()
    # Within a team the cache holds: the same answers again cost nothing.
    again = submit(toy_judge, tmp_path, answers, team=others, name="Again")
    assert SpendEstimate.objects.get(submission=again, judge=toy_judge).calls == 0
    assert len(judge_server.requests) == 8


def test_a_judge_without_a_price_judges_freely_where_no_limit_applies(
    eager, toy_judge, people, tmp_path, judge_server
):
    Judge.objects.filter(pk=toy_judge.pk).update(price_input_per_mtok=None)
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=people[0])
    assert run.status == "scored"
    estimate = SpendEstimate.objects.get(submission=run)
    assert estimate.calls == 2 and estimate.cost_usd is None
    assert len(judge_server.requests) == 2


@pytest.mark.parametrize(
    ("on_team", "team_limit", "site_limit"),
    [(True, 100, 0), (True, 0, 1000), (False, 100, 1000)],
    ids=["team-limit", "site-limit", "no-team-site-limit"],
)
def test_a_judge_without_a_price_is_not_queued_while_a_limit_applies(
    eager, toy_judge, people, tmp_path, judge_server, settings, on_team, team_limit, site_limit
):
    # The limits' defaults; the official judges are imported without prices.
    settings.MAX_JUDGE_SPEND_PER_MONTH = team_limit
    settings.MAX_JUDGE_SPEND_PER_MONTH_SITE = site_limit
    Judge.objects.filter(pk=toy_judge.pk).update(
        price_input_per_mtok=None, price_output_per_mtok=None
    )
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=people[0] if on_team else None)
    assert run.status == "failed"
    assert run.error == SPEND_UNPRICED.format(judge="official")
    assert "judge official has no price" in run.error
    assert judge_server.requests == []
    estimate = SpendEstimate.objects.get(submission=run)
    assert estimate.state == "held" and estimate.calls == 2 and estimate.cost_usd is None
    assert "judge official has no input or output price" in estimate.held_message
    assert "0 is a price" in estimate.held_message
    assert "No judge call was made" in estimate.held_message

    # Staff set prices (0 is one): a retry judges.
    Judge.objects.filter(pk=toy_judge.pk).update(price_input_per_mtok=0, price_output_per_mtok=0)
    submission_resume(submission=Submission.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert run.status == "scored", run.error
    assert len(judge_server.requests) == 2
    assert SpendEstimate.objects.get(submission=run).cost_usd == 0


def test_one_price_missing_is_no_price(eager, toy_judge, people, tmp_path, settings):
    settings.MAX_JUDGE_SPEND_PER_MONTH = 100
    Judge.objects.filter(pk=toy_judge.pk).update(price_output_per_mtok=None)
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=people[0])
    assert run.status == "failed"
    message = SpendEstimate.objects.get(submission=run).held_message
    assert "judge official has no output price" in message


def test_a_price_of_zero_is_a_price(eager, toy_judge, people, tmp_path, judge_server, settings):
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.01
    Judge.objects.filter(pk=toy_judge.pk).update(price_input_per_mtok=0, price_output_per_mtok=0)
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=people[0])
    assert run.status == "scored", run.error
    assert SpendEstimate.objects.get(submission=run).cost_usd == 0
    assert len(judge_server.requests) == 4
    assert all(c.cost_usd == 0 for c in JudgeCharge.objects.filter(submission=run))


def test_a_free_judge_judges_while_its_team_is_past_its_limit(
    eager, toy_judge, people, tmp_path, judge_server, settings
):
    team = people[0]
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.05
    charge(team=team, usd="0.07")  # past the limit already
    Judge.objects.filter(pk=toy_judge.pk).update(price_input_per_mtok=0, price_output_per_mtok=0)
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team)
    assert run.status == "scored", run.error
    assert len(judge_server.requests) == 4


def test_staff_cannot_re_score_with_a_judge_without_a_price(
    eager, toy_judge, people, tmp_path, client, settings
):
    team, *_, staff = people
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=team)
    assert run.status == "scored"
    settings.MAX_JUDGE_SPEND_PER_MONTH = 100
    unpriced = Judge.objects.create(
        benchmark=toy_judge.benchmark,
        slug="second",
        name="Second",
        provider="openai",
        models_by_kind={"grade": "toy-2"},
        base_url=toy_judge.base_url,
    )
    client.force_login(staff)
    done = client.post("/benchmarks/toy-bench/judges/second/rescore/", follow=True)
    page = done.content.decode()
    assert "Not re-scored: judge second has no price" in page
    assert not SpendEstimate.objects.filter(judge=unpriced).exists()


def test_staff_add_a_judge_with_its_prices(toy_judge, people, client):
    client.force_login(people[4])
    manage = "/benchmarks/toy-bench/judges/manage/"
    form = {
        "slug": "priced",
        "name": "Priced",
        "provider": "openai",
        "model_grade": "m",
        "base_url": toy_judge.base_url,
        "price_input_per_mtok": "1.25",
    }
    half = client.post(manage, form)
    assert half.status_code == 400
    assert "give both prices (input and output, USD per million tokens) or neither" in (
        half.content.decode()
    )
    form["price_output_per_mtok"] = "0"
    assert client.post(manage, form).status_code == 302
    judge = Judge.objects.get(slug="priced")
    assert (judge.price_input_per_mtok, judge.price_output_per_mtok) == (Decimal("1.25"), 0)


# --- Limits ---------------------------------------------------------------------------------


def test_team_limit_holds_judging_with_a_message(
    eager, toy_judge, people, tmp_path, judge_server, settings
):
    team = people[0]
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.05
    charge(team=team, usd="0.02")
    charge(team=team, usd="5.00", when=timezone.now() - timedelta(days=40))  # another month
    charge(team=people[1], usd="5.00")  # another team
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team)

    # $0.02 spent + $0.040195 estimated > $0.05: nothing is called, the submission is held.
    assert run.status == "failed" and run.error == SPEND_HELD
    assert judge_server.requests == []
    assert not Judgment.objects.filter(status__in=["running", "done"]).exists()
    estimate = SpendEstimate.objects.get(submission=run)
    assert estimate.state == "held"
    message = estimate.held_message
    assert "the judge spending limit of team Owners is $0.0500 a month" in message
    assert "Spent this month: $0.0200" in message
    assert "estimate under judge official is $0.0402 (4 calls" in message
    assert "raise the team's limit" in message and "release this submission" in message

    # Raising the team's own limit lets a retry through.
    Team.objects.filter(pk=team.pk).update(max_judge_spend_per_month=Decimal("1.00"))
    submission_resume(submission=Submission.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert run.status == "scored", run.error
    assert len(judge_server.requests) == 4
    assert SpendEstimate.objects.get(submission=run).state == "done"


def test_team_override_of_zero_is_no_limit(eager, toy_judge, people, tmp_path, settings):
    team = people[0]
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.01
    Team.objects.filter(pk=team.pk).update(max_judge_spend_per_month=0)
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=team)
    assert run.status == "scored"


def test_site_limit_counts_every_team(eager, toy_judge, people, tmp_path, judge_server, settings):
    team, others = people[0], people[1]
    settings.MAX_JUDGE_SPEND_PER_MONTH_SITE = 0.03
    charge(team=others, usd="0.01")
    # q1 alone: 2 calls, 155 characters -> 39 tokens; (39 * 2.5 + 2000 * 10) / 1e6 = 0.0200975.
    # 0.01 + 0.0200975 = 0.0300975 > 0.03.
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=team)
    assert run.status == "failed" and judge_server.requests == []
    message = SpendEstimate.objects.get(submission=run).held_message
    assert "the site-wide judge spending limit is $0.0300 a month" in message
    assert "Spent this month: $0.0100" in message
    assert "FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH_SITE" in message


def test_judging_in_progress_reserves_its_estimate(eager, toy_judge, people, tmp_path, settings):
    team = people[0]
    first = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=team, name="A")
    # As if the first were still judging with nothing charged yet: its $0.0200975 is reserved.
    Submission.objects.filter(pk=first.pk).update(status="judging")
    SpendEstimate.objects.filter(submission=first).update(state="queued")
    JudgeCharge.objects.all().delete()
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.04
    # 0.0200975 + 0.0200975 = 0.040195 > 0.04.
    run = submit(toy_judge, tmp_path, {"q2": "It is 4"}, team=team, name="B")
    assert run.status == "failed"
    assert "$0.0201 more expected by judging in progress" in (
        SpendEstimate.objects.get(submission=run).held_message
    )


def test_a_held_re_score_keeps_the_numbers_it_had(
    eager, toy_judge, people, tmp_path, judge_server, settings
):
    team = people[0]
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=team)
    assert run.status == "scored" and len(judge_server.requests) == 2
    # Both judgments failed (say): retrying them would call the judge twice, $0.0200975.
    Judgment.objects.update(status="failed")
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.01
    failed_judgments_retry(submission=Submission.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert run.status == "scored" and run.error == ""
    assert Score.objects.filter(submission=run).exists()
    assert SpendEstimate.objects.get(submission=run).state == "held"
    assert len(judge_server.requests) == 2


def test_staff_release_a_held_submission(eager, toy_judge, people, tmp_path, client, settings):
    team, _, owner, _, staff = people
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.01
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=team)
    assert run.status == "failed"
    client.force_login(owner)
    page = client.get(f"/submissions/{run.pk}/").content.decode()
    assert "the judge spending limit of team Owners is $0.0100" in page
    assert "Release past the limit" not in page  # staff only
    assert client.post(f"/submissions/{run.pk}/release-spending/").status_code == 403
    client.force_login(staff)
    response = client.post(f"/submissions/{run.pk}/release-spending/")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "scored", run.error
    estimate = SpendEstimate.objects.get(submission=run)
    assert estimate.released_by == staff and estimate.state == "done"


# --- Charges bounded while judging -----------------------------------------------------------


def verbose_judge(body, call):
    """A judge billing 100,000 output tokens an answer (and 100 in): $1.00025 a call at
    $2.50 / $10.00 per million tokens, where the estimate allows 1,000 output tokens a call."""
    return 200, {}, completion('{"score": 1.0}', prompt_tokens=100, completion_tokens=100_000)


CALL = cost(100, 100_000)  # Decimal("1.00025")


def test_judging_stops_once_its_charges_pass_the_estimate_by_the_margin(
    eager, toy_judge, people, tmp_path, judge_server, client, settings
):
    team, _, owner, _, staff = people
    assert settings.JUDGE_SPEND_MARGIN_PERCENT == 100  # the default
    # One call at a time: the charges are seen after each.
    Judge.objects.filter(pk=toy_judge.pk).update(concurrency=1)
    judge_server.responder = verbose_judge
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team)

    # Estimate $0.040195 (4 calls), so at most $0.08039 with the margin: the first call's
    # $1.00025 passes it and no other call starts.
    assert len(judge_server.requests) == 1
    charged = JudgeCharge.objects.filter(submission=run)
    assert sum(c.cost_usd for c in charged) == CALL == Decimal("1.00025")
    assert run.status == "failed" and run.error == SPEND_STOPPED
    estimate = SpendEstimate.objects.get(submission=run)
    assert estimate.state == "held"
    message = estimate.held_message
    assert message.startswith(
        "Judging stopped: the calls of this submission under judge official were charged "
    )
    assert "were charged $1.00 against its estimate of $0.0402 (4 calls" in message
    assert "margin of 100% (FLOORBOARD_JUDGE_SPEND_MARGIN_PERCENT) allow: $0.0804" in message
    # The judgments not called wait, unclaimed, for a retry or a release.
    statuses = sorted(Judgment.objects.values_list("status", flat=True))
    assert statuses == ["done", "pending", "pending", "pending"]

    # The page says so: the status with the public text, the figures to the team and staff.
    client.force_login(owner)
    page = client.get(f"/submissions/{run.pk}/").content.decode()
    assert "Judging stopped at a judge spending limit" in page
    assert "against its estimate of $0.0402" in page
    progress = client.get(f"/submissions/{run.pk}/progress/").content.decode()
    assert "Judging stopped at a judge spending limit" in progress
    assert "Held at the judge spending limit:" in progress
    assert "were charged $1.00 against its estimate of $0.0402" in progress

    # Staff release it: its judging goes on to the end, past the bound.
    client.force_login(staff)
    assert client.post(f"/submissions/{run.pk}/release-spending/").status_code == 302
    run.refresh_from_db()
    assert run.status == "scored", run.error
    assert len(judge_server.requests) == 4
    assert sum(c.cost_usd for c in JudgeCharge.objects.filter(submission=run)) == 4 * CALL


def test_the_margin_is_a_setting(eager, toy_judge, people, tmp_path, judge_server, settings):
    # $1.00025 a call against an estimate of $0.040195: 2,400% over it leaves room for
    # $0.040195 x 25 = $1.004875, which one call leaves unpassed and two pass.
    settings.JUDGE_SPEND_MARGIN_PERCENT = 2400
    Judge.objects.filter(pk=toy_judge.pk).update(concurrency=1)
    judge_server.responder = verbose_judge
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=people[0])
    assert len(judge_server.requests) == 2
    assert run.status == "failed" and run.error == SPEND_STOPPED
    assert "its margin of 2400%" in SpendEstimate.objects.get(submission=run).held_message


def test_judging_stops_at_the_teams_room_under_its_limit(
    eager, toy_judge, people, tmp_path, judge_server, settings
):
    team = people[0]
    settings.MAX_JUDGE_SPEND_PER_MONTH = 0.5
    settings.JUDGE_SPEND_MARGIN_PERCENT = 1_000_000  # the limit binds first
    Judge.objects.filter(pk=toy_judge.pk).update(concurrency=1)
    judge_server.responder = verbose_judge
    # Estimate $0.040195 of the $0.50 left: queued. Its first call is charged $1.00025.
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team, name="A")
    assert len(judge_server.requests) == 1
    assert run.status == "failed" and run.error == SPEND_STOPPED
    message = SpendEstimate.objects.get(submission=run).held_message
    assert (
        "Judging stopped at the judge spending limit of team Owners, $0.5000 a month "
        "(calendar month, UTC): spent this month $1.00, and $0.0000 more expected by other "
        "judging in progress; the calls of this submission under judge official were charged "
        "$1.00 against its estimate of $0.0402" in message
    )
    assert "raise the team's limit" in message
    # The team's next upload is held before any call.
    again = submit(toy_judge, tmp_path, {"q3": "It is 6"}, team=team, name="B")
    assert again.status == "failed" and again.error == SPEND_HELD
    assert len(judge_server.requests) == 1


def test_a_stopped_re_score_keeps_the_numbers_it_had(
    eager, toy_judge, people, tmp_path, judge_server, client, settings
):
    team, _, owner, outsider, _ = people
    Judge.objects.filter(pk=toy_judge.pk).update(concurrency=1)
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team, publish=True)
    assert run.status == "scored" and len(judge_server.requests) == 4
    score = Score.objects.get(submission=run)
    # Every judgment failed (say), and the judge now bills 100,000 tokens an answer.
    Judgment.objects.update(status="failed")
    judge_server.responder = verbose_judge
    failed_judgments_retry(submission=Submission.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert len(judge_server.requests) == 5  # one more call, then stopped
    assert run.status == "scored" and run.error == ""
    assert Score.objects.get(submission=run).pk == score.pk
    assert SpendEstimate.objects.get(submission=run).state == "held"
    # Scored as before, so the status says nothing: the progress tells the team it is held.
    client.force_login(owner)
    progress = client.get(f"/submissions/{run.pk}/progress/").content.decode()
    assert "Held at the judge spending limit:" in progress
    assert "were charged $1.00 against its estimate of $0.0402 (4 calls" in progress
    client.force_login(outsider)
    progress = client.get(f"/submissions/{run.pk}/progress/")
    assert progress.status_code == 200  # published
    assert "spending limit" not in progress.content.decode()


# --- Spent ----------------------------------------------------------------------------------


def test_spent_accumulates_from_the_judge_servers_usage(
    eager, toy_judge, people, tmp_path, judge_server
):
    team = people[0]
    seen: dict[str, int] = {}

    def responder(body, call):
        prompt = body["messages"][-1]["content"]
        seen[prompt] = seen.get(prompt, 0) + 1
        if "style" in prompt and seen[prompt] == 1:
            # The style grade's first answer does not parse: asked again (two attempts).
            return 200, {}, completion("no idea", prompt_tokens=50, completion_tokens=2)
        return 200, {}, completion('{"score": 1.0}', prompt_tokens=100, completion_tokens=5)

    judge_server.responder = responder
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team)
    assert run.status == "scored", run.error
    # Accuracy: 2 calls of 100 + 5; style: 2 x (50 + 2, then 100 + 5).
    assert len(judge_server.requests) == 6
    charges = JudgeCharge.objects.filter(submission=run)
    assert sum(c.calls for c in charges) == 6
    tokens_in = sum(c.input_tokens for c in charges)
    tokens_out = sum(c.output_tokens for c in charges)
    assert (tokens_in, tokens_out) == (2 * 100 + 2 * 150, 2 * 5 + 2 * 7)
    assert sum(c.cost_usd for c in charges) == cost(500, 24)  # 0.00149
    assert all(c.team_id == team.pk and not c.estimated for c in charges)
    # A second submission with the same answers is served from the cache: nothing charged.
    again = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team, name="B")
    assert not JudgeCharge.objects.filter(submission=again).exists()
    assert SpendEstimate.objects.get(submission=again).calls == 0


def test_spent_without_usage_is_characters_over_four(
    eager, toy_judge, people, tmp_path, judge_server
):
    answer = '{"score": 1.0, "why": "fine"}'  # 29 characters -> 8 tokens

    def responder(body, call):
        return 200, {}, {"choices": [{"message": {"content": answer}}]}

    judge_server.responder = responder
    run = submit(toy_judge, tmp_path, {"q1": "It is 2"}, team=people[0])
    charges = JudgeCharge.objects.filter(submission=run).order_by("input_tokens")
    # Sent: style 76 characters -> 19 tokens; accuracy 79 -> 20.
    assert [(c.input_tokens, c.output_tokens, c.estimated) for c in charges] == [
        (19, 8, True),
        (20, 8, True),
    ]


# --- Who sees it ----------------------------------------------------------------------------


def test_submission_page_and_api_show_spending_to_the_team_only(
    eager, toy_judge, people, tmp_path, client
):
    team, _, owner, outsider, staff = people
    run = submit(toy_judge, tmp_path, {"q1": "It is 2", "q2": "It is 4"}, team=team, publish=True)
    assert run.status == "scored"
    # 4 calls of 100 + 5 tokens: (400 * 2.5 + 20 * 10) / 1e6 = $0.0012 of the estimated $0.040195.
    line = "Spent $0.0012 of estimated $0.0402, 4 calls · 400 tokens in, 20 out"
    for user in (owner, staff):
        client.force_login(user)
        page = client.get(f"/submissions/{run.pk}/").content.decode()
        assert line in page
        assert "4 calls (at most 8 with answers asked again)" in page
        detail = client.get(f"/api/submissions/{run.pk}/").json()
        [spending] = detail["spending"]
        assert spending["judge"] == "official" and spending["calls"] == 4
        assert spending["tokens"] == {"input": 400, "output": 20}
        assert spending["cost_usd"] == 0.0012
        assert spending["estimate"]["calls"] == 4
        assert spending["estimate"]["input_tokens"] == 78
        assert spending["estimate"]["cost_usd"] == 0.040195
    for user in (outsider, None):
        client.logout()
        if user is not None:
            client.force_login(user)
        page = client.get(f"/submissions/{run.pk}/")
        assert page.status_code == 200  # published: the page itself is public
        assert "Judge spending" not in page.content.decode()
        assert "of estimated" not in page.content.decode()
        assert client.get(f"/api/submissions/{run.pk}/").json()["spending"] is None
