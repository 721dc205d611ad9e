"""End to end through the engine: import -> CLI submit -> ingest -> VAD -> ASR against a local
OpenAI-compatible transcription server -> judges against a local server speaking the Anthropic
Messages API (a 429, a 500 and a malformed answer injected) -> aggregation -> board JSON, CSV,
page -> task page -> API tasks and judgments -> a rating study; then a re-score and a
re-submission that make no ASR and no judge call.

Expected numbers come from the simulated system's own record of what it said and when, read with
a small independent implementation of the SPEC §4-6 rules written here."""

from __future__ import annotations

import email.parser
import hashlib
import io
import json
import threading
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Item
from annotation.services import StudyPlan, study_create
from evaluation.benchmarks.duplexmpe import processing
from evaluation.benchmarks.duplexmpe.demo import synthetic
from evaluation.models import Judgment, Submission, TaskResult
from evaluation.services import benchmark_import, submission_rescore
from tests.conftest import SERVE_POLL

from .conftest import write_tree, zip_upload

pytestmark = pytest.mark.django_db(transaction=True)
PROMPTS = (
    Path(__file__).resolve().parents[3] / "evaluation" / "benchmarks" / "duplexmpe" / "prompts"
)

# Which answer prompt gets which trouble, by the request it carries (explicit wordings).
TOO_MANY = "Aria, when does the pharmacy close today?"  # 429 once, then answered
BROKEN = "Aria, how far is the station from here?"  # 500 every time: no verdict
MALFORMED = "Aria, what is the weather for tomorrow?"  # never JSON: unparseable


# --- Local servers ----------------------------------------------------------------------------


class AsrServer:
    """An OpenAI-compatible /v1/audio/transcriptions endpoint. Its text names the clip by the
    hash of its bytes, so every distinct clip gets a distinct transcript."""

    def __init__(self):
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                message = email.parser.BytesParser().parsebytes(
                    f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body
                )
                fields = {
                    part.get_param("name", header="content-disposition"): part.get_payload(
                        decode=True
                    )
                    for part in message.get_payload()
                }
                audio = fields["file"]
                with wave.open(io.BytesIO(audio)) as clip:
                    seconds = clip.getnframes() / clip.getframerate()
                text = f"clip {hashlib.sha256(audio).hexdigest()[:10]}"
                with server.lock:
                    server.requests.append({"path": self.path, "model": fields["model"].decode(),
                                            "auth": self.headers.get("Authorization"),
                                            "seconds": seconds, "text": text})  # fmt: skip
                raw = json.dumps({"text": text}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, args=(SERVE_POLL,), daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def asr_server(monkeypatch):
    server = AsrServer()
    monkeypatch.setenv("DUPLEXMPE_ASR_BASE_URL", server.url)
    monkeypatch.setenv("DUPLEXMPE_ASR_MODEL", "test-asr-1")
    monkeypatch.setenv("DUPLEXMPE_ASR_API_KEY", "asr-key")
    yield server
    server.close()


def messages_reply(text: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 120, "output_tokens": 9}}  # fmt: skip


def judge_responder(body, call):
    prompt = body["messages"][0]["content"]
    if "Gold answer:" not in prompt:
        return 200, {}, messages_reply('{"label": "intrusion", "reason": "it adds content"}')
    if TOO_MANY in prompt and call == 1:
        return 429, {"Retry-After": "0"}, {"type": "error", "error": {"type": "rate_limit"}}
    if BROKEN in prompt:
        return 500, {}, {"type": "error", "error": {"type": "api_error"}}
    if MALFORMED in prompt:
        return 200, {}, messages_reply("I think it is right.")
    return 200, {}, messages_reply('{"correct": true, "reason": "same meaning"}')


@pytest.fixture
def board(eager, settings, release_dir, judge_server):
    settings.JUDGE_MAX_ATTEMPTS = 2
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.0
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.0
    settings.ANTHROPIC_API_KEY = "sk-ant-test"
    judge_server.responder = judge_responder
    benchmark = benchmark_import(slug="duplex-mpe", directory=release_dir,
                                 plugin="duplex-mpe").benchmark  # fmt: skip
    official = benchmark.judges.get(is_official=True)
    official.base_url = judge_server.url
    # A local judge costs nothing; priced at 0, the spending limits let it judge.
    official.price_input_per_mtok = official.price_output_per_mtok = 0
    official.save()
    return benchmark


# --- The truth, read independently ------------------------------------------------------------


def episodes(said: list[dict]) -> list[tuple[int, int]]:
    """SPEC §4 from scratch: ms half up, join pauses < 800 ms, drop episodes < 120 ms."""
    spans = sorted((int(s["start"] * 1000 + 0.5), int(s["end"] * 1000 + 0.5)) for s in said)
    joined: list[list[int]] = []
    for start, end in spans:
        if joined and start - joined[-1][1] < 800:
            joined[-1][1] = max(joined[-1][1], end)
        else:
            joined.append([start, end])
    return [(s, e) for s, e in joined if e - s >= 120]


def truth(tree: Path, scenarios) -> dict:
    """Per condition: what the SPEC's timing rules give on the recorded speech."""
    out = {c: {"t": 0, "fresh": 0, "present": 0, "windows": 0, "silent": 0, "n4": 0,
               "window_response": 0, "eligible": 0, "yielded": 0, "answers": set(),
               "acks": 0} for c in ("explicit", "implicit")}  # fmt: skip
    for scenario in scenarios:
        stem = synthetic.run_stem(scenario)
        log = json.loads((tree / "schedule" / f"{stem}.json").read_text())
        speech = episodes(json.loads((tree / "said" / f"{stem}.json").read_text()))
        turns = [(t["label"], int(t["start"] * 1000 + 0.5), int(t["end"] * 1000 + 0.5))
                 for t in log["turns"]]  # fmt: skip

        def active(t, speech=speech):
            return any(s <= t < e for s, e in speech)

        def onset(a, b, speech=speech):
            return any(a < s <= b for s, _ in speech)

        def overlap(a, b, speech=speech):
            return any(s < b and e > a for s, e in speech)

        c = out[scenario.condition]
        for n, (label, start, end) in enumerate(turns):
            if label == "T":
                c["t"] += 1
                present = active(end) or onset(end, end + 5000)
                c["present"] += present
                c["fresh"] += (not active(end)) and onset(end, end + 5000)
                if present:
                    c["answers"].add(scenario.t_turn().text)
            elif label in ("N1", "N2", "N3"):
                c["windows"] += 1
                spoke = overlap(start, end + 500)
                c["silent"] += not spoke
                c["acks"] += spoke
            elif label == "N4Q":
                _, r_start, r_end = turns[n + 1]
                c["n4"] += 1
                c["window_response"] += overlap(start, end + 3000)
                eligible = (not active(start) and not overlap(start, end)
                            and onset(end, end + 3000) and active(r_start))  # fmt: skip
                if eligible:
                    deadline = r_start + 2000
                    c["eligible"] += 1
                    c["yielded"] += not active(deadline) and not overlap(
                        deadline, max(deadline, r_end + 500)
                    )
    return out


def rate(count, total):
    return {"count": count, "total": total, "pct": None if not total else
            int((200 * count * 100 + total) // (2 * total)) / 100}  # fmt: skip


# --- The test ---------------------------------------------------------------------------------


def submit(path: Path, system: str) -> dict:
    out = io.StringIO()
    call_command("submit", str(path), "--benchmark", "duplex-mpe", "--system", system,
                 "--wait", "--json", "--publish", stdout=out)  # fmt: skip
    return json.loads(out.getvalue())


def test_upload_to_board_with_local_asr_and_judge(board, judge_server, asr_server, scenarios,
                                                  tmp_path, monkeypatch):  # fmt: skip
    tree = tmp_path / "good"
    write_tree(tree, scenarios, profile="good", seed=5)
    (tree / "manifest.json").write_text(json.dumps({"organization": "Test Lab"}))
    bundle = zip_upload(tree, tmp_path / "good.zip")
    expected = truth(tree, scenarios)

    chunks = []
    original = processing.vad_step
    monkeypatch.setattr(processing, "vad_step",
                        lambda tasks, **kw: chunks.append(len(tasks)) or original(tasks, **kw))  # fmt: skip
    summary = submit(bundle, "Good Duplex")
    assert summary["status"] == "scored", summary["error"]
    # The engine handed the VAD step every run of the chunk at once (batched through the model).
    assert chunks == [len(scenarios)]

    results = summary["results"]
    for condition in ("explicit", "implicit"):
        want, got = expected[condition], results[condition]
        assert got["fresh_onset"] == rate(want["fresh"], want["t"])
        assert got["presence"] == rate(want["present"], want["t"])
        assert got["silence"] == rate(want["silent"], want["windows"])  # every ack: intrusion
        assert got["window_response"] == rate(want["window_response"], want["n4"])
        assert (got["yield"]["count"], got["yield"]["total"]) == (want["yielded"], want["eligible"])
        assert got["yield"]["pct"] is None  # fewer than 30 eligible events: not reported
    # Accuracy: implicit answers all correct; explicit: only the one behind a 429 survives,
    # the 500 leaves no verdict and the malformed answer is unparseable, both incorrect.
    implicit_present = expected["implicit"]["present"]
    assert results["implicit"]["accuracy"] == rate(implicit_present, implicit_present)
    explicit_answers = expected["explicit"]["answers"]
    assert {TOO_MANY, BROKEN, MALFORMED} <= explicit_answers
    assert results["explicit"]["accuracy"] == rate(1, len(explicit_answers))
    assert results["explicit"]["accuracy_not_correct"] == {"missing": 1, "unparseable": 1}
    assert summary["failed_judgments"] == 1

    # ASR: every judged item has a transcript; no clip was sent twice (two runs whose answer
    # is the same utterance at the same offsets share one call); the configured model and key.
    items = sum(len(e["answers"]) + e["acks"] for e in expected.values())
    sent = [r["text"] for r in asr_server.requests]
    assert len(sent) == len(set(sent)) <= items
    stored = [found["text"] for row in TaskResult.objects.filter(submission_id=summary["submission"])
              for found in row.detection["transcripts"].values()]  # fmt: skip
    assert len(stored) == items and set(stored) == set(sent)
    assert {r["model"] for r in asr_server.requests} == {"test-asr-1"}
    assert {r["auth"] for r in asr_server.requests} == {"Bearer asr-key"}
    assert {r["path"] for r in asr_server.requests} == {"/v1/audio/transcriptions"}
    # Judges: the Messages API, retried after the 429, twice for the 500, 3 answers for the
    # malformed one.
    assert {r["_path"] for r in judge_server.requests} == {"/v1/messages"}
    assert {r["model"] for r in judge_server.requests} == {"claude-opus-5"}
    prompts = [r["messages"][0]["content"] for r in judge_server.requests]
    assert sum(TOO_MANY in p for p in prompts) == 2
    assert sum(BROKEN in p for p in prompts) == 2
    assert sum(MALFORMED in p for p in prompts) == 3

    # The CLI printed every metric per condition with its counts.
    rows = {(r["split"], r["metric"]): r for r in summary["metrics"]}
    assert rows[("explicit", "yield.total")]["value"] == expected["explicit"]["eligible"]
    fresh = rows[("implicit", "fresh_onset")]
    assert (fresh["count"], fresh["total"]) == (expected["implicit"]["fresh"], 3)

    submission = Submission.objects.get(pk=summary["submission"])
    assert submission.facts["unverified"] is False
    assert submission.facts["transcripts"] == f"ASR here: test-asr-1 ({items})"
    assert submission.facts["log_disagreements"] == 0

    client = Client()
    board_json = client.get("/api/benchmarks/duplex-mpe/leaderboard/?split=implicit").json()
    systems = {e["system"]: e for e in board_json["entries"]}
    assert {"MiniCPM-o 4.5", "Moshi", "FLM-Audio", "Voila", "Freeze-Omni"} <= set(systems)
    assert systems["Moshi"]["flags"]["reported_in_paper"]
    assert systems["MiniCPM-o 4.5"]["results"]["implicit"]["paired_presence"]["p"] == 0.396
    ours = systems["Good Duplex"]
    assert ours["results"] == Submission.objects.get(pk=submission.pk).scores.get().results
    assert ours["badges"] == []
    assert [c["key"] for c in board_json["columns"]][:3] == [
        "implicit.fresh_onset", "implicit.accuracy", "implicit.silence"]  # fmt: skip
    page = client.get("/benchmarks/duplex-mpe/").content.decode()
    answer_prompt = (PROMPTS / "answer.txt").read_text(encoding="utf-8")
    from django.utils.html import escape

    assert escape(answer_prompt.splitlines()[0]) in page  # the prompt is on the benchmark page
    assert "McNemar p" in page
    csv_text = client.get("/benchmarks/duplex-mpe/leaderboard.csv").content.decode()
    assert "explicit.yield.total" in csv_text.splitlines()[0]
    assert client.get("/benchmarks/duplex-mpe/charts.json").status_code == 200

    # The drill-down of a run: timeline, windows, both channels.
    row = TaskResult.objects.filter(submission=submission).select_related("task").first()
    html = client.get(f"/submissions/{submission.pk}/tasks/{row.task.task_id}/").content.decode()
    assert 'data-name="input.wav"' in html and 'data-name="output.wav"' in html
    assert "silence window" in html and "response window" in html
    assert "{#" not in html and "task_context" not in html  # template comments stay comments
    assert row.detection["input_audio"]["key"].startswith("duplexmpe/input/")
    tasks = client.get(f"/api/submissions/{submission.pk}/tasks/").json()
    assert tasks["count"] == len(scenarios)
    t_task = synthetic.run_stem(next(s for s in scenarios if s.t_turn().text == BROKEN))
    judgments = client.get(f"/api/submissions/{submission.pk}/tasks/{t_task}/judgments/").json()
    answers = [j for j in judgments["judgments"] if j["kind"] == "answer"]
    assert len(answers) == 1 and answers[0]["status"] == "failed"
    assert BROKEN in answers[0]["prompt"] and answers[0]["model"] == "claude-opus-5"

    # A rating study of answers: units carry both channels with the judged window.
    study = study_create(plan=StudyPlan(
        name="Answers", slug="answers", benchmark=board, judge=submission.judge, kind="answer",
        strata=(submission,), guideline_text="Rate the answer.", per_stratum=2, overlap=1,
        positive_label="correct", negative_label="incorrect"))  # fmt: skip
    items_made = list(Item.objects.filter(study=study))
    assert len(items_made) == 2
    for item in items_made:
        assert [c["role"] for c in item.clips] == ["context", "response"]
        assert all(c["start"] is not None and c["end"] > c["start"] for c in item.clips)
        assert item.response_text.startswith("clip ")

    # A re-score calls neither the ASR nor the judge: everything is stored.
    asr_calls, judge_calls = len(asr_server.requests), len(judge_server.requests)
    submission_rescore(submission=submission)
    submission.refresh_from_db()
    assert submission.status == "scored"
    assert (len(asr_server.requests), len(judge_server.requests)) == (asr_calls, judge_calls)

    # The same audio submitted again: transcripts and judgments come from the caches.
    again = submit(bundle, "Good Duplex again")
    assert again["status"] == "scored"
    assert (len(asr_server.requests), len(judge_server.requests)) == (asr_calls, judge_calls)
    assert again["results"] == results
    assert Judgment.objects.filter(status="done").count() + 1 == Judgment.objects.count()

    # Two systems on the same runs: compared unit by unit (a T turn, a window, an N4 event);
    # the same audio differs in nothing. Slices by the runs' attributes.
    compared = client.get(
        f"/api/benchmarks/duplex-mpe/compare/?a={submission.pk}&b={again['submission']}"
        "&split=explicit"
    ).json()
    rows = {m["key"]: m for m in compared["overall"]["metrics"]}
    # Three runs: below the six tasks an exact test needs to reach p < 0.05, no test, and the
    # note says why; the windows of a run count as units but the run is the test's unit.
    assert (
        rows["explicit.fresh_onset"]["test"] == ""
        and rows["explicit.fresh_onset"]["p_value"] is None
    )
    assert rows["explicit.fresh_onset"]["note"].startswith("n = 3 tasks")
    assert rows["explicit.fresh_onset"]["units_a"] == 3
    assert rows["explicit.silence"]["tasks"] == 3
    assert rows["explicit.silence"]["units_a"] == expected["explicit"]["windows"]
    assert all(m["difference"] in (0, None) for m in rows.values())
    assert {s["slice"].split("=")[0] for s in compared["by_slice"]} <= {
        "speakers", "t_position", "n4_after_t"}  # fmt: skip
    sliced = client.get("/api/benchmarks/duplex-mpe/leaderboard/?slice=speakers=3&split=explicit")
    assert sliced.status_code == 200
    assert client.get(f"/benchmarks/duplex-mpe/compare/?a={submission.pk}&b="
                      f"{again['submission']}").status_code == 200  # fmt: skip


def test_the_submitters_transcripts_are_used_and_labelled(board, judge_server, asr_server,
                                                         scenarios, tmp_path):  # fmt: skip
    tree = tmp_path / "late"
    write_tree(tree, scenarios, profile="chatty", seed=9, transcripts=True)
    summary = submit(zip_upload(tree, tmp_path / "t.zip"), "Chatty Duplex")
    assert summary["status"] == "scored", summary["error"]
    assert asr_server.requests == []
    submission = Submission.objects.get(pk=summary["submission"])
    assert submission.facts["transcripts"].startswith("the submitter's ASR (their-asr-1)")
    # The judge saw the words the system said in each window.
    ack_prompts = [r["messages"][0]["content"] for r in judge_server.requests
                   if "Gold answer:" not in r["messages"][0]["content"]]  # fmt: skip
    assert ack_prompts and all("Actually, I can help with that" in p for p in ack_prompts)


def test_a_low_trust_upload_is_scored_and_shown_as_unverified(board, judge_server, asr_server,
                                                              scenarios, tmp_path):  # fmt: skip
    tree = tmp_path / "lt"
    spoken = write_tree(tree, scenarios, profile="chatty", seed=9)
    with (tree / "segments.jsonl").open("w") as handle:
        for scenario in scenarios:
            said = spoken[synthetic.run_stem(scenario)]
            handle.write(json.dumps({"scenario_id": scenario.scenario_id,
                                     "condition": scenario.condition,
                                     "segments": [[s.start / 1000, s.end / 1000] for s in said]})
                         + "\n")  # fmt: skip
    (tree / "judgments.jsonl").write_text("")  # no verdicts at all: every item fails
    for path in (tree / "audio").iterdir():
        path.unlink()
    (tree / "audio").rmdir()
    summary = submit(zip_upload(tree, tmp_path / "lt.zip"), "Self-measured")
    assert summary["status"] == "scored", summary["error"]
    assert asr_server.requests == [] and judge_server.requests == []
    expected = truth(tree, scenarios)
    for condition in ("explicit", "implicit"):
        got = summary["results"][condition]
        assert got["silence"] == rate(expected[condition]["silent"],
                                      expected[condition]["windows"])  # fmt: skip
        assert got["accuracy"]["count"] == 0
        assert got["complete"] is False  # required verdicts are missing
    entry = next(e for e in Client().get("/api/benchmarks/duplex-mpe/leaderboard/").json()["entries"]
                 if e["system"] == "Self-measured")  # fmt: skip
    assert [b["label"] for b in entry["badges"]] == ["unverified"]
    page = Client().get("/benchmarks/duplex-mpe/").content.decode()
    assert 'class="badge fact"' in page
