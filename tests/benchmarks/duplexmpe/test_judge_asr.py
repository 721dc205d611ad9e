"""Judge prompts, parsing and outcomes (SPEC §7); the ASR client against a local server; clip
extraction; the offline stand-ins; the paper's reported rows."""

from __future__ import annotations

import email.parser
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile

from evaluation.benchmarks.duplexmpe import asr, judge, paper
from evaluation.benchmarks.duplexmpe.demo import offline
from evaluation.benchmarks.duplexmpe.metrics import ScoringError
from evaluation.speech import to_wav_bytes
from tests.conftest import SERVE_POLL

# --- prompts ---------------------------------------------------------------------------------


def test_answer_prompt_carries_request_gold_and_transcript_once():
    req = judge.request("answer", transcript=" It is {gold_answer} nine. ",
                        request_text="Aria, when?", gold_answer="At nine.")  # fmt: skip
    assert req["system"] is None and req["kind"] == "answer"
    assert "Request: Aria, when?" in req["user"] and "Gold answer: At nine." in req["user"]
    assert "may contain recognition errors): It is {gold_answer} nine." in req["user"]
    assert '{"correct": true or false' in req["user"]  # the template's JSON stays literal
    assert len(req["template_version"]) == 12


def test_an_empty_transcript_is_decided_without_a_call():
    assert judge.request("ack", transcript="  ") == {
        "kind": "ack",
        "fixed_outcome": "empty_transcript",
    }
    assert (
        judge.outcome("answer", transcript="", attempts=['{"correct": true}']) == "empty_transcript"
    )


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"correct": true, "reason": "same"}', True),
        ('  {"correct": false}  ', False),
        ('Sure.\n```json\n{"correct": true}\n```\n```json\n{"correct": false}\n```', True),
        ('Verdict: {"correct": false, "reason": "a {brace} inside"} done', False),
        ('{"correct": "true"}', None),
        ('{"correct": 1}', None),
        ('{"correct": null}', None),
        ("correct: True", None),
        ("[true]", None),
        (None, None),
    ],
)
def test_answer_parsing(raw, expected):
    parsed = judge.parse("answer", raw)
    assert (parsed["correct"] if parsed else None) is expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"label": "acknowledgement"}', "acknowledgement"),
        ('{"label": "Acknowledgment", "reason": "US spelling"}', "acknowledgement"),
        ('{"label": " INTRUSION "}', "intrusion"),
        ('{"label": "backchannel"}', None),
        ('{"label": true}', None),
        ("intrusion", None),
    ],
)
def test_ack_parsing(raw, expected):
    parsed = judge.parse("ack", raw)
    assert (parsed["label"] if parsed else None) == expected


def test_the_first_parseable_attempt_decides():
    attempts = ["not json", '{"label": "intrusion"}', '{"label": "acknowledgement"}']
    assert judge.outcome("ack", transcript="Sure.", attempts=attempts) == "intrusion"
    assert judge.outcome("ack", transcript="Sure.", attempts=["nope", None]) == "unparseable"
    assert judge.outcome("ack", transcript="Sure.", attempts=[None, None]) == "missing"
    assert judge.outcome("answer", transcript="x", attempts=[]) == "missing"


def test_judgment_records_become_verdicts_and_duplicates_are_rejected():
    record = {"scenario_id": "s1", "condition": "explicit", "turn_index": 2, "kind": "answer",
              "transcript": "At nine.", "raw": '{"correct": true}'}  # fmt: skip
    assert judge.verdicts_from_judgments([record]) == {("s1", "explicit", 2, "answer"): "correct"}
    with pytest.raises(
        ScoringError, match="duplicate judgment for s1 \\(explicit\\) turn 2 answer"
    ):
        judge.verdicts_from_judgments([record, record])


# --- ASR -------------------------------------------------------------------------------------


class _Asr(BaseHTTPRequestHandler):
    status = 200
    seen: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        message = email.parser.BytesParser().parsebytes(
            b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body
        )
        parts = {p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
                 for p in message.get_payload()}  # fmt: skip
        type(self).seen.append((self.path, self.headers.get("Authorization"), parts))
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"text": " Nine dollars. "}).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def asr_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Asr)
    thread = threading.Thread(target=server.serve_forever, args=(SERVE_POLL,), daemon=True)
    thread.start()
    _Asr.seen, _Asr.status = [], 200
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_transcription_posts_the_file_and_model(asr_server):
    config = asr.AsrConfig(base_url=asr_server, model="qwen3-asr-1.7b", api_key="k")
    wav = to_wav_bytes(np.zeros(1600, np.float32), 16000)
    assert asr.transcribe(wav, config=config) == "Nine dollars."
    path, auth, parts = _Asr.seen[0]
    assert path == "/v1/audio/transcriptions" and auth == "Bearer k"
    assert parts["model"] == b"qwen3-asr-1.7b" and parts["file"] == wav


@pytest.mark.parametrize(("status", "error"), [(429, asr.TransientAsrError),
                         (503, asr.TransientAsrError), (400, asr.AsrError)])  # fmt: skip
def test_failures_are_typed_so_the_engine_knows_what_to_retry(asr_server, status, error):
    _Asr.status = status
    config = asr.AsrConfig(base_url=asr_server, model="m")
    with pytest.raises(error) as caught:
        asr.transcribe(b"RIFF", config=config)
    assert isinstance(caught.value, asr.TransientAsrError) is (status != 400)


def test_an_unreachable_server_is_transient():
    config = asr.AsrConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    with pytest.raises(asr.TransientAsrError):
        asr.transcribe(b"RIFF", config=config)


def test_cache_key_changes_with_audio_and_identity_only():
    identity = asr.AsrConfig(base_url="http://a/v1", model="m").identity()
    elsewhere = asr.AsrConfig(base_url="http://b/v1", model="m", api_key="x").identity()
    assert asr.cache_key(b"a", identity) == asr.cache_key(b"a", elsewhere)
    assert asr.cache_key(b"a", identity) != asr.cache_key(b"b", identity)
    other = asr.AsrConfig(base_url="http://a/v1", model="m2").identity()
    assert asr.cache_key(b"a", identity) != asr.cache_key(b"a", other)


def test_spans_are_cut_and_joined_with_a_short_silence(tmp_path):
    rate = 8000
    ramp = (np.arange(10 * rate) % 1000 / 1000).astype(np.float32)
    stereo = np.stack([ramp, ramp], axis=1)
    path = tmp_path / "run.wav"
    soundfile.write(path, stereo, rate, subtype="FLOAT")
    clip = asr.extract_spans(path, [[1000, 1500], [3000, 3250]])
    audio, clip_rate = soundfile.read(io.BytesIO(clip), dtype="float32")
    assert clip_rate == rate and len(audio) == 4000 + 1600 + 2000
    np.testing.assert_allclose(audio[:4000], ramp[8000:12000], atol=1e-4)
    assert not audio[4000:5600].any()
    np.testing.assert_allclose(audio[5600:], ramp[24000:26000], atol=1e-4)


# --- offline stand-ins and the paper ---------------------------------------------------------


def test_offline_transcripts_and_judge(tmp_path):
    said = tmp_path / "said.json"
    said.write_text(json.dumps([{"start": 1.0, "end": 2.0, "text": "Mm-hm."},
                                {"start": 5.0, "end": 7.0, "text": "At nine in the evening."}]))  # fmt: skip
    assert offline.transcript_from_said(said, [[4000, 5500]]) == "At nine in the evening."
    assert offline.transcript_from_said(said, [[0, 1000]]) == ""
    raw = offline.judge("answer", transcript="It is at nine in the evening", gold_answer="At nine.")
    assert judge.outcome("answer", transcript="x", attempts=[raw]) == "correct"
    raw = offline.judge("answer", transcript="I am not sure.", gold_answer="At nine.")
    assert judge.outcome("answer", transcript="x", attempts=[raw]) == "incorrect"
    assert "not an LLM" in json.loads(raw)["reason"]
    for text, label in [("Mm-hm.", "acknowledgement"), ("Okay, understood.", "acknowledgement"),
                        ("Nine dollars.", "intrusion"), ("Okay, I can help with that.", "intrusion")]:  # fmt: skip
        raw = offline.judge("ack", transcript=text)
        assert judge.outcome("ack", transcript=text, attempts=[raw]) == label


def test_paper_rows_keep_counts_only_where_published():
    rows = dict(paper.reported_rows())
    assert list(rows) == ["MiniCPM-o 4.5", "Moshi", "FLM-Audio", "Voila", "Freeze-Omni"]
    mini = rows["MiniCPM-o 4.5"]
    assert mini["explicit"]["fresh_onset"] == {"count": 1900, "total": 2000, "pct": 95.0}
    assert mini["explicit"]["yield"] == {"count": 974, "total": 1633, "pct": 59.64}
    assert mini["implicit"]["fresh_onset"] == {"count": None, "total": 2000, "pct": 94.35}
    assert mini["paired_presence"]["p"] == 0.396 and mini["paired_presence"]["explicit_only"] == 90
    freeze = rows["Freeze-Omni"]["explicit"]
    assert freeze["yield"] == {"count": 0, "total": 1, "pct": None}
    assert freeze["silence"] == {"count": 5, "total": 20360, "pct": 0.02}
    assert rows["FLM-Audio"]["explicit"]["accuracy"] == {"count": 2, "total": 1901, "pct": 0.11}
    # Published yields agree with their own counts (974 / 1633 = 59.64 %).
    for results in rows.values():
        for condition in ("explicit", "implicit"):
            y = results[condition]["yield"]
            if y["pct"] is not None:
                assert round(100 * y["count"] / y["total"], 2) == y["pct"]
