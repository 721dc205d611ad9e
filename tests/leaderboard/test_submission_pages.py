"""The submission page, its live progress fragment, the task page and who may see them, checked
against the demo bundles' own files and hand-counted rows; plus the pages in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import time
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User

from evaluation.benchmarks.mpbench import demo
from evaluation.models import (
    Judge,
    Judgment,
    Membership,
    Submission,
    System,
    TaskJudgment,
    TaskResult,
    Team,
)
from evaluation.services import benchmark_import, submission_create

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
VIEWERS = ("owner", "teammate", "outsider", "anonymous", "staff")
KINDS = ("understanding", "speaker_name", "discussion", "turnbased")


# --- Fixtures --------------------------------------------------------------------------------


@pytest.fixture
def demo_board(eager, tmp_path):
    demo.write_demo_benchmark(tmp_path / "source")
    return benchmark_import(
        slug="demo",
        directory=tmp_path / "source",
        plugin="mp-bench",
        name="Demo bench",
        is_demo=True,
    ).benchmark


@pytest.fixture
def people(db):
    team = Team.objects.create(name="Owners", slug="owners")
    others = Team.objects.create(name="Others", slug="others")
    owner = User.objects.create_user("owner", password="pw")
    teammate = User.objects.create_user("teammate", password="pw")
    outsider = User.objects.create_user("outsider", password="pw")
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    Membership.objects.create(team=team, user=teammate)
    Membership.objects.create(team=others, user=outsider, role=Membership.Role.OWNER)
    return SimpleNamespace(
        team=team,
        owner=owner,
        teammate=teammate,
        outsider=outsider,
        staff=staff,
        anonymous=None,
    )


def submit(board, tmp_path, *, profile, team, publish, judge=None, name=""):
    bundle = tmp_path / f"{profile}-{publish}-{time.monotonic_ns()}.zip"
    demo.write_demo_bundle_zip(bundle, profile=profile, seed=3)
    submission = submission_create(
        benchmark=board,
        bundle_path=bundle,
        system_name=name or f"{profile} ({'public' if publish else 'private'})",
        judge=judge or board.judges.get(slug="offline"),
        team=team,
        publish=publish,
    )
    submission.refresh_from_db()
    assert submission.status == "scored", submission.error
    return submission


def login(client, user):
    client.logout()
    if user is not None:
        client.force_login(user)


def bundle_words(folder: Path, name: str) -> list[dict]:
    """Valid chunks of one transcript the demo generator wrote, read straight from its file."""
    chunks = json.loads(folder.joinpath(name).read_text())["chunks"]
    return [c for c in chunks if c.get("timestamp") and len(c["timestamp"]) == 2]


def task_ids_in(page: str, submission_pk: int) -> list[str]:
    return re.findall(rf'href="/submissions/{submission_pk}/tasks/([^/"]+)/"', page)


def audio_links(page: str) -> dict[str, dict[str, str]]:
    """name -> {"audio": url, "peaks": url} from the player fragments on a task page."""
    found = {}
    for block in re.findall(r"<div class=\"fb-player\"(.*?)</div>", page, re.S):
        name = re.search(r'data-name="([^"]*)"', block).group(1)
        found[name] = {
            "peaks": html.unescape(re.search(r'data-peaks="([^"]*)"', block).group(1)),
            "audio": html.unescape(re.search(r'src="([^"]*)"', block).group(1)),
        }
    return found


# --- Who may see what --------------------------------------------------------------------------


@pytest.mark.parametrize("published", [True, False], ids=["published", "unpublished"])
def test_every_page_and_file_follows_the_visibility_rule(
    client, demo_board, people, tmp_path, published
):
    run = submit(
        demo_board, tmp_path, profile="streaming-chatty", team=people.team, publish=published
    )
    task_id = demo.DEMO_TASKS[0].task_dir
    pages = {
        "submission page": f"/submissions/{run.pk}/",
        "progress fragment": f"/submissions/{run.pk}/progress/",
        "task page": f"/submissions/{run.pk}/tasks/{task_id}/",
    }
    login(client, people.owner)
    owners_links = audio_links(client.get(pages["task page"]).content.decode())
    assert set(owners_links) == {"all_stitched.wav", "response.wav"}

    for viewer in VIEWERS:
        user = getattr(people, viewer)
        allowed = published or viewer in ("owner", "teammate", "staff")
        login(client, user)
        for what, url in pages.items():
            status = client.get(url).status_code
            assert status == (200 if allowed else 404), (viewer, what, status)
        if allowed:
            links = audio_links(client.get(pages["task page"]).content.decode())
            response = client.get(links["response.wav"]["audio"], HTTP_RANGE="bytes=0-99")
            assert response.status_code == 206, viewer
            assert len(b"".join(response.streaming_content)) == 100
            peaks = client.get(links["response.wav"]["peaks"])
            assert peaks.status_code == 200 and peaks.json()["buckets"] > 0, viewer
        # A link made for another viewer is refused, even for a published submission.
        if viewer != "owner":
            for kind in ("audio", "peaks"):
                status = client.get(owners_links["response.wav"][kind]).status_code
                assert status == 403, (viewer, kind, status)

    # Unpublishing (or hiding) takes effect at once, even on links already handed out.
    login(client, None)
    if published:
        anonymous_links = audio_links(client.get(pages["task page"]).content.decode())
        assert client.get(anonymous_links["response.wav"]["audio"]).status_code == 200
        Submission.objects.filter(pk=run.pk).update(is_hidden=True)
        assert client.get(anonymous_links["response.wav"]["audio"]).status_code == 403
        assert client.get(anonymous_links["response.wav"]["peaks"]).status_code == 403
        assert client.get(pages["task page"]).status_code == 404


def test_a_public_submission_of_a_team_with_many_members_is_one_page(
    client, demo_board, people, tmp_path
):
    run = submit(demo_board, tmp_path, profile="silent", team=people.team, publish=True)
    login(client, people.outsider)  # three memberships on the owning team must not matter
    assert client.get(f"/submissions/{run.pk}/").status_code == 200


def test_reported_rows_have_no_submission_page(client, demo_board):
    system = System.objects.create(name="Paper system")
    reported = Submission.objects.create(
        benchmark=demo_board, system=system, is_reported=True, status="scored"
    )
    assert client.get(f"/submissions/{reported.pk}/").status_code == 404
    assert client.get("/submissions/999999/").status_code == 404


def test_only_the_team_and_staff_may_retry(client, demo_board, people, tmp_path):
    public = submit(demo_board, tmp_path, profile="silent", team=people.team, publish=True)
    private = submit(demo_board, tmp_path, profile="strong", team=people.team, publish=False)
    for viewer in VIEWERS:
        login(client, getattr(people, viewer))
        manager = viewer in ("owner", "teammate", "staff")
        response = client.post(f"/submissions/{public.pk}/retry/")
        assert response.status_code == (302 if manager else 403), viewer
        response = client.post(f"/submissions/{private.pk}/retry/")
        assert response.status_code == (302 if manager else 404), viewer
    assert client.get(f"/submissions/{public.pk}/retry/").status_code == 405
    # Not while it is still running.
    Submission.objects.filter(pk=private.pk).update(status="judging")
    login(client, people.owner)
    response = client.post(f"/submissions/{private.pk}/retry/")
    assert response.status_code == 409 and b"still judging" in response.content


# --- The submission page -----------------------------------------------------------------------


@pytest.fixture
def priced_judge(demo_board, judge_server):
    return Judge.objects.create(
        benchmark=demo_board,
        slug="llm",
        name="LLM judge",
        provider=Judge.Provider.OPENAI,
        base_url=judge_server.url,
        models_by_kind={kind: f"model-{kind}" for kind in KINDS},
        price_input_per_mtok=Decimal("2.50"),
        price_output_per_mtok=Decimal("10.00"),
    )


def test_judge_identity_tokens_cost_and_failed_judgments(
    client, demo_board, people, tmp_path, judge_server, priced_judge, settings
):
    settings.JUDGE_MAX_ATTEMPTS = 1
    usage = {"prompt_tokens": 1200, "completion_tokens": 40}
    state = {"broken": True}

    def responder(body, call):
        if state["broken"] and body["model"] == "model-turnbased":
            return 200, {}, {"choices": [{"message": {"content": "not json"}}], "usage": usage}
        content = json.dumps({"correct": True, "consistent": True, "reasoning": "fine"})
        return 200, {}, {"choices": [{"message": {"content": content}}], "usage": usage}

    judge_server.responder = responder
    run = submit(
        demo_board,
        tmp_path,
        profile="strong",
        team=people.team,
        publish=False,
        judge=priced_judge,
    )
    login(client, people.owner)
    page = client.get(f"/submissions/{run.pk}/").content.decode()

    # Tokens and cost: every distinct judgment was one call with the usage above.
    calls = len(judge_server.requests)
    distinct = len(set(judge_server.prompts()))
    assert calls == distinct > 0
    tokens_in, tokens_out = 1200 * distinct, 40 * distinct
    assert f"{tokens_in} in · {tokens_out} out" in page
    cost = (Decimal(tokens_in) * Decimal("2.50") + Decimal(tokens_out) * Decimal("10.00")) / 10**6
    assert f"${cost:.4f}" in page
    # The judge's identity: provider, the model for each kind, sampling, prompt versions.
    assert "OpenAI-compatible" in page
    for kind in KINDS:
        assert f"{kind}: <code>model-{kind}</code>" in page
    assert "temperature=0.0, top_p=1.0, max_completion_tokens=4096" in page
    for kind in ("understanding", "speaker_name", "discussion", "turnbased"):
        assert f"{kind} v1" in page

    # Every turn-based call failed (the answer was not JSON): counted, and retryable here.
    n_turnbased = sum(1 for t in demo.DEMO_TASKS if t.family == "turnbased")
    assert f'Failed judgments: <strong class="bad">{n_turnbased}</strong>' in page
    assert f"Retry {n_turnbased} failed judgments" in page
    unsettled = client.get(f"/submissions/{run.pk}/", {"verdict": "none"}).content.decode()
    assert task_ids_in(unsettled, run.pk) == expected_rows(run, verdict="none")
    assert task_ids_in(unsettled, run.pk) == sorted(
        t.task_dir for t in demo.DEMO_TASKS if t.family == "turnbased"
    )

    state["broken"] = False
    response = client.post(f"/submissions/{run.pk}/retry/")
    assert response.status_code == 302
    assert response["Location"] == f"/submissions/{run.pk}/?retried={n_turnbased}"
    page = client.get(response["Location"]).content.decode()
    assert f"{n_turnbased} failed judgments queued again" in page
    assert 'Failed judgments: <strong class="">0</strong>' in page


def test_cost_is_a_dash_when_the_price_is_unknown(client, demo_board, people, tmp_path):
    run = submit(demo_board, tmp_path, profile="silent", team=people.team, publish=True)
    page = client.get(f"/submissions/{run.pk}/").content.decode()
    assert re.search(r"<dt>Cost</dt><dd>—", page)
    assert "0 in · 0 out" in page  # the offline judge makes no calls
    assert "Offline (heuristic, not an LLM)" in page


def make_queued(board, name: str, status: str) -> Submission:
    system = System.objects.create(name=name)
    return Submission.objects.create(
        benchmark=board, system=system, status=status, is_published=True
    )


def test_status_and_queue_position_in_the_live_fragment(client, demo_board):
    first = make_queued(demo_board, "first", "queued")
    make_queued(demo_board, "second", "ingesting")
    make_queued(demo_board, "done", "scored")
    make_queued(demo_board, "broken", "failed")
    make_queued(demo_board, "aggregating", "aggregating")
    make_queued(demo_board, "judging", "judging")
    last = make_queued(demo_board, "last", "queued")

    fragment = client.get(f"/submissions/{last.pk}/progress/")
    assert fragment["Cache-Control"] == "no-store"
    text = fragment.content.decode()
    assert text.lstrip().startswith('<div id="submission-progress"')
    assert 'data-final="false"' in text
    # Ahead of it: first (queued), second (ingesting), judging. Not scored, failed, aggregating.
    assert "queue position: 3 submissions ahead of it" in text
    assert "next in line" in client.get(f"/submissions/{first.pk}/progress/").content.decode()

    Submission.objects.filter(pk=last.pk).update(status="scored")
    text = client.get(f"/submissions/{last.pk}/progress/").content.decode()
    assert 'data-final="true"' in text and "queue position" not in text
    page = client.get(f"/submissions/{last.pk}/").content.decode()
    assert 'data-poll-url="/submissions/' in page and "submission.js" in page


def test_progress_counts(client, demo_board, people, tmp_path):
    run = submit(demo_board, tmp_path, profile="silent", team=people.team, publish=True)
    text = client.get(f"/submissions/{run.pk}/progress/").content.decode()
    n_tasks = len(demo.DEMO_TASKS)
    assert f"Tasks ingested: {n_tasks} / {n_tasks}" in text
    links = TaskJudgment.objects.filter(task_result__submission=run, judge=run.judge)
    called = links.filter(judgment__isnull=False).count()
    empty = links.filter(judgment__isnull=True).count()
    assert f"Judged: {called} / {called}" in text
    assert f"{empty} outcomes decided by rule without a call" in text
    assert "Status: <strong>scored</strong>" in text and 'data-final="true"' in text


# --- The drill-down table ----------------------------------------------------------------------


def expected_rows(run: Submission, **wanted) -> list[str]:
    """Filter the task rows by hand, one Python condition per filter."""
    out = []
    for row in TaskResult.objects.filter(submission=run).select_related("task"):
        links = list(TaskJudgment.objects.filter(task_result=row, judge=run.judge))
        verdicts = []
        for link in links:
            if link.judgment_id is None:
                verdicts.append(False)  # empty response: false without a call
                continue
            judgment = Judgment.objects.get(pk=link.judgment_id)
            verdicts.append(judgment.verdict if judgment.status == "done" else "unsettled")
        checks = {
            "family": lambda v, row=row: row.task.spec["family"] == v,
            "spoke": lambda v, row=row: row.detection["spoke"] == (v == "yes"),
            "should_speak": lambda v, row=row: row.task.spec["should_speak"] == (v == "yes"),
            "turn_taking": lambda v, row=row: row.detection["turn_taking_correct"] == (v == "yes"),
            "verdict": lambda v, verdicts=verdicts: {
                "correct": bool(verdicts) and all(x is True for x in verdicts),
                "wrong": False in verdicts,
                "none": False not in verdicts and (not verdicts or "unsettled" in verdicts),
            }[v],
        }
        if all(checks[name](value) for name, value in wanted.items()):
            out.append(row.task.task_id)
    return sorted(out)


QUERIES = [
    {},
    {"family": "discussion"},
    {"family": "turnbased", "should_speak": "no"},
    {"spoke": "yes"},
    {"spoke": "no", "family": "turnbased"},
    {"turn_taking": "no"},
    {"turn_taking": "yes", "family": "understanding"},
    {"verdict": "correct"},
    {"verdict": "wrong", "family": "understanding"},
]


def test_task_filters(client, demo_board, people, tmp_path):
    run = submit(demo_board, tmp_path, profile="streaming-chatty", team=people.team, publish=True)
    for query in QUERIES:
        response = client.get(f"/submissions/{run.pk}/", query)
        assert response.status_code == 200
        shown = task_ids_in(response.content.decode(), run.pk)
        assert shown == expected_rows(run, **query), query
        assert shown, query  # every query above matches some of this run's tasks


def test_pagination_keeps_filters_and_bad_values_are_named(
    client, demo_board, people, tmp_path, monkeypatch
):
    from leaderboard import views_submissions

    monkeypatch.setattr(views_submissions, "TASKS_PER_PAGE", 4)
    run = submit(demo_board, tmp_path, profile="strong", team=people.team, publish=True)
    wanted = sorted(t.task_dir for t in demo.DEMO_TASKS if t.family == "understanding")
    first = client.get(f"/submissions/{run.pk}/?family=understanding").content.decode()
    assert task_ids_in(first, run.pk) == wanted[:4]
    assert "page 1 of 2" in first
    assert 'href="?family=understanding&amp;page=2#tasks"' in first
    second = client.get(f"/submissions/{run.pk}/?family=understanding&page=2").content.decode()
    assert task_ids_in(second, run.pk) == wanted[4:8]

    bad = client.get(f"/submissions/{run.pk}/?family=poetry")
    assert bad.status_code == 400
    assert "Family: Select a valid choice. poetry is not one of the available choices." in (
        html.unescape(bad.content.decode())
    )


# --- The task page ------------------------------------------------------------------------------


def test_task_page_shows_conversation_timeline_responses_and_judgments(
    client, demo_board, people, tmp_path
):
    run = submit(demo_board, tmp_path, profile="streaming-chatty", team=people.team, publish=False)
    folder = tmp_path / "folder"
    demo.write_demo_bundle(folder, profile="streaming-chatty", seed=3, audio=False)
    login(client, people.teammate)
    task = next(t for t in demo.DEMO_TASKS if t.family == "discussion")
    response = client.get(f"/submissions/{run.pk}/tasks/{task.task_dir}/")
    assert response.status_code == 200
    page = response.content.decode()
    text = html.unescape(page)

    # The speaker-labelled conversation, in order.
    positions = [text.index(content) for _, content in task.turns]
    assert positions == sorted(positions)
    for speaker, content in task.turns:
        assert re.search(
            rf'<span class="speaker">{re.escape(speaker)}</span>.*?<br>{re.escape(content)}',
            text,
        )

    # The agent's words on the timeline, and where the input ends.
    inputs = bundle_words(folder / task.task_dir, "all_stitched.json")
    outputs = bundle_words(folder / task.task_dir, "response.json")
    input_end = max(c["timestamp"][1] for c in inputs)
    lane = re.search(r'<div class="lane lane-2".*?</div>', page, re.S).group(0)
    seeks = [float(x) for x in re.findall(r'data-seek="([^"]+)"', lane)]
    assert seeks == [c["timestamp"][0] for c in outputs]
    post = re.findall(r'class="w post"[^>]*>([^<]*)<', lane)
    assert post == [c["text"] for c in outputs if c["timestamp"][0] >= input_end]
    assert f"input ends {input_end:.2f} s" in page
    input_lane = re.search(r'<div class="lane lane-1".*?</div>', page, re.S).group(0)
    assert len(re.findall(r'data-seek="', input_lane)) == len(inputs)

    # Both responses, and the players.
    row = TaskResult.objects.get(submission=run, task__task_id=task.task_dir)
    expected_post = " ".join(c["text"] for c in outputs if c["timestamp"][0] >= input_end)
    found = row.detection
    assert found["post_text"] == expected_post.strip()
    assert html.escape(found["post_text"]) in page and html.escape(found["full_text"]) in page
    players = audio_links(page)
    assert list(players) == ["all_stitched.wav", "response.wav"]
    assert f'data-markers="[{{&quot;time&quot;: {input_end}' in page

    # The judgment: exact prompt, raw output, verdict and reasoning.
    link = TaskJudgment.objects.select_related("judgment").get(task_result=row)
    judgment = link.judgment
    assert html.escape(judgment.prompt) in page
    assert html.escape(judgment.raw_output) in page
    assert html.escape(judgment.reasoning) in page
    assert f"{link.kind}:" in page


def test_an_empty_response_says_it_was_not_sent_to_the_judge(client, demo_board, people, tmp_path):
    run = submit(demo_board, tmp_path, profile="silent", team=people.team, publish=True)
    link = (
        TaskJudgment.objects.filter(task_result__submission=run, judgment__isnull=True)
        .select_related("task_result__task")
        .first()
    )
    assert link is not None and not link.task_result.detection["full_text"]
    page = client.get(f"/submissions/{run.pk}/tasks/{link.task_result.task.task_id}/")
    assert "judged false without calling the judge" in page.content.decode()
    # In the table such a task is judged wrong.
    wrong = client.get(f"/submissions/{run.pk}/", {"verdict": "wrong"}).content.decode()
    assert link.task_result.task.task_id in task_ids_in(wrong, run.pk)
    assert task_ids_in(wrong, run.pk) == expected_rows(run, verdict="wrong")
    assert client.get(f"/submissions/{run.pk}/tasks/scenario_nope/").status_code == 404


# --- In a real browser ----------------------------------------------------------------------------


def session_cookie(client, user, live_server) -> dict:
    client.force_login(user)
    return {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}


def test_play_seek_and_speed_in_chromium(
    browser, live_server, client, demo_board, people, tmp_path, monkeypatch
):
    from leaderboard import audio

    run = submit(demo_board, tmp_path, profile="strong", team=people.team, publish=False)
    seen: list[tuple[str | None, int]] = []
    serve = audio.ranged_response

    def spy(request, name):
        response = serve(request, name)
        seen.append((request.headers.get("Range"), response.status_code))
        return response

    monkeypatch.setattr(audio, "ranged_response", spy)
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([session_cookie(client, people.owner, live_server)])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/submissions/{run.pk}/")
    assert "Status: scored" in page.inner_text("#submission-progress")
    page.screenshot(path=str(ARTIFACTS / "submission-page.png"), full_page=True)

    task = next(t for t in demo.DEMO_TASKS if t.family == "discussion")
    page.goto(f"{live_server.url}/submissions/{run.pk}/tasks/{task.task_dir}/")
    response_player = '[data-floorboard-player][data-name="response.wav"]'
    page.wait_for_function(
        "sel => { const p = FloorboardPlayer.get(document.querySelector(sel));"
        " return p && p.peaks && p.duration > 0; }",
        arg=response_player,
    )
    duration = page.evaluate(
        "sel => FloorboardPlayer.get(document.querySelector(sel)).duration", response_player
    )
    # 16 kHz mono 16-bit: the duration follows from the stored file's size.
    row = TaskResult.objects.get(submission=run, task__task_id=task.task_dir)
    assert duration == pytest.approx((row.files["response.wav"]["size"] - 44) / 32000, abs=0.01)

    page.click(f"{response_player} .fb-play")
    page.wait_for_function(
        "sel => document.querySelector(sel + ' audio').currentTime > 0.3", arg=response_player
    )
    assert page.get_attribute(f"{response_player} .fb-play", "aria-label") == "Pause"
    page.click(f"{response_player} .fb-play")
    paused_at = page.evaluate(f"document.querySelector('{response_player} audio').currentTime")

    # Seek by clicking three quarters of the way along the waveform.
    box = page.locator(f"{response_player} .fb-wave").bounding_box()
    page.mouse.click(box["x"] + 0.75 * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_function(
        "([sel, t]) => Math.abs(document.querySelector(sel + ' audio').currentTime - t) < 0.05",
        arg=[response_player, 0.75 * duration],
    )
    assert 0.75 * duration > paused_at + 1
    # The keyboard works on the focused waveform: right arrow is one second on.
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([sel, t]) => Math.abs(document.querySelector(sel + ' audio').currentTime - t) < 0.05",
        arg=[response_player, 0.75 * duration + 1],
    )

    page.select_option(f"{response_player} select", "1.5")
    assert page.evaluate(f"document.querySelector('{response_player} audio').playbackRate") == 1.5
    page.evaluate(
        "sel => FloorboardPlayer.get(document.querySelector(sel)).setRate(0.5)", response_player
    )
    assert page.input_value(f"{response_player} select") == "0.5"

    # Seeking past the end and letting it finish is not "played through".
    page.evaluate(
        "sel => { const p = FloorboardPlayer.get(document.querySelector(sel));"
        " p.setRate(2); p.seek(p.duration - 0.6); return p.play(); }",
        response_player,
    )
    page.wait_for_function(
        "sel => document.querySelector(sel + ' audio').ended", arg=response_player, timeout=10000
    )
    assert (
        page.evaluate(
            "sel => FloorboardPlayer.get(document.querySelector(sel)).playedThrough",
            response_player,
        )
        is False
    )

    page.screenshot(path=str(ARTIFACTS / "task-page.png"), full_page=True)
    page.locator("#audio").screenshot(path=str(ARTIFACTS / "task-players.png"))
    assert not errors, errors
    # The browser fetched the audio with Range requests, and the server answered 206.
    assert any(header and header.startswith("bytes=") and status == 206 for header, status in seen)
    context.close()


def test_playing_a_clip_through_is_noticed(
    browser, live_server, client, demo_board, people, tmp_path
):
    run = submit(demo_board, tmp_path, profile="silent", team=people.team, publish=True)
    task = demo.DEMO_TASKS[0]
    page = browser.new_page()
    page.goto(f"{live_server.url}/submissions/{run.pk}/tasks/{task.task_dir}/")
    player = '[data-floorboard-player][data-name="all_stitched.wav"]'
    page.wait_for_function(
        "sel => { const p = FloorboardPlayer.get(document.querySelector(sel));"
        " return p && p.duration > 0; }",
        arg=player,
    )
    page.evaluate(
        "sel => { const p = FloorboardPlayer.get(document.querySelector(sel));"
        " window.events = []; p.on('playedthrough', () => window.events.push('through'));"
        " p.onended = () => window.events.push('ended'); p.setRate(2); return p.play(); }",
        player,
    )
    duration = page.evaluate(
        "sel => FloorboardPlayer.get(document.querySelector(sel)).duration", player
    )
    page.wait_for_function(
        "() => window.events.includes('ended')", timeout=(duration / 2 + 10) * 1000
    )
    assert page.evaluate("() => window.events") == ["through", "ended"]
    assert page.locator(f"{player}.fb-played-through").count() == 1
    page.close()


def test_the_status_updates_itself_until_final(browser, live_server, demo_board):
    system = System.objects.create(name="Running")
    running = Submission.objects.create(
        benchmark=demo_board, system=system, status="judging", is_published=True
    )
    page = browser.new_page()
    page.goto(f"{live_server.url}/submissions/{running.pk}/")
    assert "Status: judging" in page.inner_text("#submission-progress")
    Submission.objects.filter(pk=running.pk).update(status="aggregating")
    page.wait_for_function(
        "() => document.querySelector('#submission-progress').dataset.status === 'aggregating'",
        timeout=6000,
    )
    # Final: the page reloads itself once (to show the scores) and stops polling.
    with page.expect_navigation(timeout=8000):
        Submission.objects.filter(pk=running.pk).update(status="scored")
    assert "Status: scored" in page.inner_text("#submission-progress")
    page.close()
