"""The toy's spoken answers, as a real plug-in's clips: its demo's good run is a zip of the
answers and a WAV per answer that it synthesizes itself, the WAVs are stored at ingest, and the
task page plays them through the core's player (ranges answered with 206 and the stored bytes);
a run uploaded as text alone has no player; an answer's timed words are drawn on a timeline.
Upload problems name their file."""

from __future__ import annotations

import html
import io
import json
import re
import wave
import zipfile

import pytest

from evaluation.benchmarks.base import UploadLimits
from evaluation.bundles import ValidationReport
from tests.conftest import demo_runs_scored, every_plugin_board
from tests.toyplugin import toy

pytestmark = pytest.mark.django_db(transaction=True)

LIMITS = UploadLimits(max_bytes=10 * 1024**2, max_ratio=100.0)


def players(page: str) -> list[str]:
    return [html.unescape(src) for src in re.findall(r'<audio[^>]* src="([^"]+)"', page)]


def test_the_good_demo_run_holds_every_answer_spoken(tmp_path):
    good, fair = toy.plugin.write_demo_runs(tmp_path)
    assert good.path.suffix == ".zip" and fair.path.suffix == ".jsonl"
    with zipfile.ZipFile(good.path) as archive:
        answers = [json.loads(line) for line in archive.read("answers.jsonl").splitlines()]
        assert sorted(archive.namelist()) == sorted(
            ["answers.jsonl", *(f"q{i}.wav" for i in range(1, 7))]
        )
        for record in answers:
            with wave.open(io.BytesIO(archive.read(f"{record['id']}.wav"))) as clip:
                assert (clip.getnchannels(), clip.getsampwidth(), clip.getframerate()) == (
                    1,
                    2,
                    8000,
                )
                assert clip.getnframes() / clip.getframerate() >= 1.0


def test_spoken_answers_play_on_the_task_page(settings, tmp_path, client):
    benchmark, plugin = every_plugin_board("toy-bench", settings, tmp_path, name="audio")
    spoken, text_only = demo_runs_scored(benchmark, plugin, tmp_path, count=2)
    with zipfile.ZipFile(tmp_path / "uploads" / "good.zip") as archive:
        expected = archive.read("q1.wav")

    page = client.get(f"/submissions/{spoken.pk}/tasks/q1/").content.decode()
    [source] = players(page)
    assert "The answer, spoken" in page
    whole = client.get(source)
    assert whole.status_code == 200
    assert b"".join(whole.streaming_content) == expected
    part = client.get(source, HTTP_RANGE="bytes=100-199")
    assert part.status_code == 206
    assert part["Content-Range"] == f"bytes 100-199/{len(expected)}"
    assert b"".join(part.streaming_content) == expected[100:200]

    page = client.get(f"/submissions/{text_only.pk}/tasks/q1/").content.decode()
    assert players(page) == []


def _zip(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_upload_problems_name_their_file(tmp_path):
    tasks = {task["id"]: task for task in toy.TASKS}
    answers = "\n".join(json.dumps({"id": i, "answer": "It is 2"}) for i in tasks).encode()
    clip = toy.spoken("It is 2")

    report = ValidationReport()
    found = toy.plugin.validate_upload(
        _zip(tmp_path / "a.zip", {"a.jsonl": answers, "q1.wav": clip, "q9.wav": clip}),
        report,
        tasks=tasks,
        allow_partial=False,
        options={},
        limits=LIMITS,
    )
    assert report.ok and found.present == set(tasks)
    assert [(w.file, w.message) for w in report.warnings] == [
        ("q9.wav", "no answer of this task is in the upload; ignored")
    ]

    report = ValidationReport()
    toy.plugin.validate_upload(
        _zip(tmp_path / "b.zip", {"a.jsonl": answers, "b.jsonl": answers}),
        report,
        tasks=tasks,
        allow_partial=False,
        options={},
        limits=LIMITS,
    )
    assert [(p.file, p.message) for p in report.problems] == [
        ("b.jsonl", "a second answers file; give one")
    ]

    report = ValidationReport()
    toy.plugin.validate_upload(
        _zip(tmp_path / "c.zip", {"q1.wav": clip}),
        report,
        tasks=tasks,
        allow_partial=True,
        options={},
        limits=LIMITS,
    )
    assert [p.message for p in report.problems] == ["the zip holds no .jsonl answers file"]


def test_timed_words_are_checked_and_drawn_on_the_task_page(settings, tmp_path, client):
    """An answer's spoken words, timed, are drawn as one lane that seeks the spoken answer;
    words that are not [{start, end, text}] with start <= end are a problem on their line."""
    from evaluation.services import submission_create
    from evaluation.services.work import inline

    tasks = {task["id"]: task for task in toy.TASKS}
    report = ValidationReport()
    bad = [{"start": 1.0, "end": 0.5, "text": "late"}]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "q1", "answer": "It is 2", "words": bad}) + "\n")
    toy.plugin.validate_upload(
        path, report, tasks=tasks, allow_partial=True, options={}, limits=LIMITS
    )
    assert [(p.file, p.message) for p in report.problems] == [
        (
            "answers.jsonl",
            'line 1: "words" must be a list of {"start", "end", "text"} with start <= end, '
            "in seconds",
        )
    ]

    benchmark, _ = every_plugin_board("toy-bench", settings, tmp_path, name="words")
    words = [{"start": 0.0, "end": 0.4, "text": "It"}, {"start": 0.5, "end": 0.9, "text": "is"}]
    path = tmp_path / "words.jsonl"
    path.write_text(json.dumps({"id": "q1", "answer": "It is 2", "words": words}) + "\n")
    with inline():
        submission = submission_create(
            benchmark=benchmark,
            bundle_path=path,
            system_name="Timed",
            judge=benchmark.judges.get(slug="offline"),
            publish=True,
            allow_partial=True,
        )
    page = client.get(f"/submissions/{submission.pk}/tasks/q1/").content.decode()
    [lane] = re.findall(r'<div class="lane lane-1"[^>]*>(.*?)</div>', page, re.S)
    assert re.findall(r'data-seek="([\d.]+)"[^>]*>([^<]*)</span>', lane) == [
        ("0.0", "It"),
        ("0.5", "is"),
    ]
