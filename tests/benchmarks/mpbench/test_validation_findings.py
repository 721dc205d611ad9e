"""Validation hands each task's detection evidence to the detection run at ingest, so that the
transcripts are parsed once. What detection finds from it must be exactly what it finds from the
files, types included (an int timestamp stays an int, a float comes back to the last bit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import TaskFiles, TaskInput, UploadLimits
from evaluation.benchmarks.mpbench import detection
from evaluation.bundles import ValidationReport
from evaluation.models import Submission, UploadFindings
from tests.conftest import copy_examples, transcript, wav_file, words, write_task, zip_tree

PLUGIN = get_plugin("mp-bench")
LIMITS = UploadLimits(max_bytes=10**9, max_ratio=1000.0)
EXAMPLES = 3


def _cases(post: bool) -> list[dict]:
    """Task folders covering every path through detection. ``post``: most responses have words
    after the input ends (else the run is half-duplex by the probe)."""
    late = 5 if post else 0
    return [
        # int timestamps, a response word exactly at the input's end
        {
            "all_stitched.json": transcript(words(("hi", 0, 1), ("there", 1, 2))),
            "response.json": transcript(words(("yes", 2 - 2 * (not post), 3 + late))),
        },
        # floats that need every bit
        {
            "all_stitched.json": transcript(words(("a", 0.1, 0.30000000000000004))),
            "response.json": transcript(
                words(("b", 0.2, 0.3), ("c", 12.345678901234567 * (post or 0.01), 13.5 + late))
            ),
        },
        # a word just before the input's end, then words after it (or none)
        {
            "all_stitched.json": transcript(words(("x", 1.0, 4.75))),
            "response.json": transcript(
                words(("early", 4.7499, 4.8), *([("late", 4.75, 5.0)] if post else []))
            ),
        },
        # text only: no chunks
        {
            "all_stitched.json": transcript(words(("q", 0.0, 1.0))),
            "response.json": {"text": "  spoken, no words  ", "chunks": []},
        },
        # empty text, chunks joined; malformed chunks ignored
        {
            "all_stitched.json": transcript(words(("q", 0.0, 1.0))),
            "response.json": {
                "text": "",
                "chunks": [
                    "not a chunk",
                    3,
                    None,
                    {"text": 5, "timestamp": [1.5 if post else 0.25, 2.0]},
                    {"text": "no stamp", "timestamp": None},
                    {"text": "short", "timestamp": [1.0]},
                    {"text": "long", "timestamp": [1.0, 2.0, 3.0]},
                    {"text": " café ✓ ", "timestamp": [-0.0, 0.5]},
                    {"timestamp": [2.0 if post else 0.75, 2.5]},
                ],
            },
        },
        # answers while the input still plays (after it too, in a post-input run)
        {
            "all_stitched.json": transcript(words(("one", 0, 5), ("two", 5, 10))),
            "response.json": transcript(words(("sure", 4, 6), ("ok", 9 + 2 * post, 12))),
        },
        {
            "all_stitched.json": transcript(words(("ça", 0.0, 0.5))),
            "response.json": transcript(words(("日本", 0.25, 0.5 + post))),
        },
        # latency from the combined transcript
        {
            "all_stitched.json": transcript(words(("in", 0.0, 2.0))),
            "response.json": transcript(words(("out", 2.5 if post else 1.5, 3.0))),
            "combined.json": transcript(words(("in", 0.0, 2.0), ("out", 2.25, 3.0))),
        },
        # a combined transcript with no word after the input
        {
            "all_stitched.json": transcript(words(("in", 0.0, 2.0))),
            "response.json": transcript(words(("out", 2.5 if post else 1.0, 3.0))),
            "combined.json": transcript(words(("in", 0.0, 2.0))),
        },
        # other layouts
        {
            "input.json": transcript(words(("in", 0, 3))),
            "output.json": transcript(words(("out", 3 if post else 2, 4))),
        },
        {
            "all_stitched/input.json": transcript(words(("in", 0.0, 1.25))),
            "all_stitched/output.json": transcript(words(("out", 1.5 if post else 1.0, 2.0))),
            "all_stitched/combined.json": transcript(words(("in", 0.0, 1.25), ("out", 1.5, 2))),
        },
        {
            "combined.json": transcript(words(("in", 0.0, 1.0), ("out", 1.5, 2.0))),
            "output.json": transcript(words(("out", 1.5 if post else 0.5, 2.0))),
        },
        # an input with no words beside a response: not both valid
        {
            "all_stitched.json": {"text": "said", "chunks": []},
            "response.json": transcript(words(("out", 1.0, 2.0))),
        },
        # no pair: a response alone, an empty response, audio alone
        {"response.json": transcript(words(("alone", 0.0, 1.0)))},
        {"all_stitched.json": transcript(words(("in", 0.0, 1.0))), "response.json": b""},
        {"clip.wav": wav_file(b"\x00\x00" * 1600)},
    ]


def _run(mpbench_dir: Path, root: Path, tasks: dict, post: bool) -> list[str]:
    """A bundle of the real examples and the cases, under real task ids."""
    copy_examples(mpbench_dir, root)
    examples = sorted(p.name for p in root.iterdir())
    free = [task_id for task_id in sorted(tasks) if task_id not in examples]
    for task_id, files in zip(free, _cases(post), strict=False):
        write_task(root / task_id, files)
    return sorted(p.name for p in root.iterdir())


class FolderFiles(TaskFiles):
    def __init__(self, folder: Path):
        self.size, self.read = detection.directory_reader(folder)


def _validated(bundle: Path, tasks: dict) -> dict:
    report = ValidationReport()
    contents = PLUGIN.validate_upload(
        bundle, report, tasks=tasks, allow_partial=True, options={}, limits=LIMITS
    )
    assert report.ok, report.problems
    return contents.findings


@pytest.mark.parametrize("post", [True, False], ids=["post-input", "half-duplex"])
def test_detection_from_validation_is_exactly_detection_from_the_files(
    tmp_path, mpbench_dir, mpbench_tasks, post
):
    root = tmp_path / "run"
    present = _run(mpbench_dir, root, mpbench_tasks, post)
    assert len(present) == EXAMPLES + len(_cases(post))
    findings = _validated(zip_tree(root, tmp_path / "run.zip"), mpbench_tasks)
    assert sorted(findings) == present
    # Kept as JSON text in between, as the submission keeps them.
    kept = json.loads(json.dumps(findings))

    step = PLUGIN.steps[0]
    from_files = [
        TaskInput(task_id, mpbench_tasks[task_id], files=FolderFiles(root / task_id))
        for task_id in present
    ]
    from_validation = [
        TaskInput(task_id, mpbench_tasks[task_id], validated=kept[task_id]) for task_id in present
    ]
    facts, found = PLUGIN.run_submission_step(step, from_files, facts={})
    facts_v, found_v = PLUGIN.run_submission_step(step, from_validation, facts={})
    # As text, so that 2 and 2.0 differ.
    assert json.dumps(found_v, sort_keys=True) == json.dumps(found, sort_keys=True)
    assert facts_v == facts and facts["half_duplex"] is (not post)
    # The cases reach every way of speaking, and the latency's int and float forms.
    vias = {found[task_id]["spoke_via"] for task_id in present}
    assert vias == {"post_input", "full_text", ""} | ({"half_duplex"} if not post else set())
    assert {type(found[task_id]["latency"]) for task_id in present} >= {float, type(None)}
    for task_id in present:
        evidence = detection.collect_evidence(*detection.directory_reader(root / task_id))
        assert detection.evidence_from_json(kept[task_id]) == evidence
        assert json.dumps(kept[task_id]) == json.dumps(detection.evidence_json(evidence))


def test_ints_and_floats_come_back_as_they_were():
    evidence = detection.Evidence(
        has_pair=True,
        both_valid=True,
        input_end=2,
        full_text="a b",
        post_words=(detection.Word("a", 2, 3), detection.Word("b", 0.1 + 0.2, 1e-7)),
        first_output_start=-0.0,
        combined_latency=34.800000000000004,
    )
    back = detection.evidence_from_json(json.loads(json.dumps(detection.evidence_json(evidence))))
    assert back == evidence
    assert type(back.input_end) is int and type(back.post_words[1].start) is float
    assert str(back.first_output_start) == "-0.0"


def test_a_refused_upload_hands_on_nothing(tmp_path, mpbench_dir, mpbench_tasks):
    root = tmp_path / "run"
    _run(mpbench_dir, root, mpbench_tasks, True)
    (next(root.glob("scenario_*")) / "response.json").write_text('{"text": 1}')
    report = ValidationReport()
    contents = PLUGIN.validate_upload(
        zip_tree(root, tmp_path / "run.zip"),
        report,
        tasks=mpbench_tasks,
        allow_partial=True,
        options={},
        limits=LIMITS,
    )
    assert not report.ok and contents.findings == {}


# --- kept with the submission until ingest --------------------------------------------------


def _detections(submission) -> str:
    return json.dumps(
        dict(submission.task_results.values_list("task__task_id", "detection")), sort_keys=True
    )


@pytest.mark.django_db(transaction=True)
def test_ingest_takes_the_findings_once_and_a_stage_run_again_finds_the_same(
    tmp_path, eager, mpbench, mpbench_dir, mpbench_tasks
):
    from evaluation.services import pipeline, submission_create

    root = tmp_path / "run"
    _run(mpbench_dir, root, mpbench_tasks, False)
    bundle = zip_tree(root, tmp_path / "run.zip")
    kept = []
    original = pipeline._findings_take

    def spy(submission, plugin):
        found = original(submission, plugin)
        kept.append(found)
        return found

    pipeline._findings_take = spy
    try:
        submission = submission_create(
            benchmark=mpbench,
            bundle_path=bundle,
            system_name="Findings",
            judge=mpbench.judges.get(slug="offline"),
            allow_partial=True,
        )
    finally:
        pipeline._findings_take = original
    submission.refresh_from_db()
    assert submission.status == "scored"
    # Ingest had one finding per task present, and dropped them once stored.
    assert len(kept) == 1 and sorted(kept[0]) == sorted(p.name for p in root.iterdir())
    assert not UploadFindings.objects.exists()
    first = _detections(submission)
    assert submission.facts["half_duplex"] is True

    # The step again as a stage of its own reads the upload, and finds the same, to the type.
    submission.task_results.update(detection={}, steps_done=0, detected=False)
    Submission.objects.filter(pk=submission.pk).update(status="detecting", steps_done=0, facts={})
    pipeline.steps_start(submission_id=submission.pk)
    again = Submission.objects.get(pk=submission.pk)
    assert again.status == "scored" and again.facts == submission.facts
    assert _detections(again) == first


@pytest.mark.django_db
def test_findings_kept_under_other_steps_are_not_used(
    tmp_path, mpbench, mpbench_dir, mpbench_tasks
):
    """Kept under the current versions, the findings are what detection uses (here, altered to
    show it); kept under another step version (a deploy between upload and ingest), they are
    ignored and the files are read. Either way they are dropped."""
    from evaluation.services import pipeline, submission_create, work

    root = tmp_path / "run"
    present = _run(mpbench_dir, root, mpbench_tasks, True)
    bundle = zip_tree(root, tmp_path / "run.zip")
    offline = mpbench.judges.get(slug="offline")
    results = {}
    for name, version in (("current", None), ("older", "0")):
        submission = submission_create(
            benchmark=mpbench,
            bundle_path=bundle,
            system_name=f"Findings {name}",
            judge=offline,
            allow_partial=True,
        )
        stored = UploadFindings.objects.get(submission=submission)
        kept = json.loads(stored.text)
        assert sorted(kept["tasks"]) == present
        kept["tasks"][present[0]][3] = "altered full text"
        if version is not None:
            kept["versions"]["steps"][0][1] = version
        stored.text = json.dumps(kept)
        stored.save()
        with work.inline():
            pipeline.submission_ingest(submission_id=submission.pk)
        assert not UploadFindings.objects.filter(submission=submission).exists()
        results[name] = submission.task_results.get(task__task_id=present[0]).detection
    assert results["current"]["full_text"] == "altered full text"
    assert results["older"]["full_text"] != "altered full text"
    assert results["older"]["full_text"]
