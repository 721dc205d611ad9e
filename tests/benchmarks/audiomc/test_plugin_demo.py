"""The demo: an invented parquet export with user-turn clips that play, a stand-in prompt
written by code (never the dataset card's), invented text- and audio-output systems scored by
the offline judge, the board with its axis columns, the task page with its players, a rating
study of rubric items, and the slices the board offers."""

from __future__ import annotations

import re
import wave
from collections import Counter

import pytest
from django.core.files.storage import default_storage

from annotation.models import Item
from annotation.services import StudyPlan, study_create
from evaluation.benchmarks import registry
from evaluation.benchmarks.audiomc import plugin
from evaluation.benchmarks.audiomc.dataset import AXES
from evaluation.models import Judgment, Score, Submission
from evaluation.services import benchmark_import, submission_create
from evaluation.services.work import inline

from .conftest import SHARED_AUDIOMC

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_plugin_is_registered_and_sliced():
    assert registry()["audio-multichallenge"] is plugin
    assert [s.name for s in plugin.slices] == ["axis", "user_turns"]
    assert plugin.task_attributes("t", {"axis": "VOICE_EDITING", "last_user_turn": 5}) == {
        "axis": "VOICE_EDITING",
        "user_turns": 5,
    }


def test_demo_board_scores_every_invented_system(tmp_path, client):
    source = tmp_path / "source"
    plugin.write_demo_source(source)
    stand_in = (source / "judge_prompt.txt").read_text("utf-8")
    assert "Demo stand-in" in stand_in
    released = SHARED_AUDIOMC / "judge_prompt.txt"
    if released.is_file():  # the dataset card's prompt, when it is beside the checkout
        assert stand_in != released.read_text("utf-8")
    summary = benchmark_import(
        slug="audio-multichallenge-demo",
        directory=source,
        plugin="audio-multichallenge",
        is_demo=True,
    )
    assert summary.tasks_created == 48 and summary.assets_stored > 48 * 3
    board = summary.benchmark
    axes = Counter(task.spec["axis"] for task in board.tasks.all())
    assert set(axes) == set(AXES) and min(axes.values()) >= 5
    task = board.tasks.order_by("task_id").first()
    key = task.assets["user_turn_1.wav"]["key"]
    with default_storage.open(key) as handle, wave.open(handle) as clip:
        assert clip.getnframes() / clip.getframerate() > 0.3  # a clip that plays

    offline = board.judges.get(slug="offline")
    runs = plugin.write_demo_runs(tmp_path / "uploads")
    assert {run.path.suffix for run in runs} == {".jsonl", ".zip"}
    for run in runs:
        with inline():
            submission_create(
                benchmark=board,
                bundle_path=run.path,
                system_name=run.system,
                row_group=run.row_group,
                judge=offline,
                publish=True,
                options=dict(run.options),
            )
    submissions = list(Submission.objects.filter(benchmark=board))
    assert [s.status for s in submissions] == ["scored"] * len(runs)
    groups = {s.system.name: s.row_group for s in submissions}
    assert groups["Demo Speaking Voice (synthetic)"] == "audio-output"
    assert groups["Demo Attentive Voice (synthetic)"] == "text-output"
    reasons = set(Judgment.objects.values_list("reasoning", flat=True))
    assert reasons and all("not an LLM" in reason for reason in reasons)
    results = {
        s.system.name: Score.objects.get(submission=s, judge=offline).results for s in submissions
    }
    strong = results["Demo Attentive Voice (synthetic)"]["overall"]
    weak = results["Demo Forgetful Voice (synthetic)"]["overall"]
    assert strong["ars"]["pct"] > weak["ars"]["pct"]
    assert all(r["complete"] for r in results.values())

    page = client.get("/benchmarks/audio-multichallenge-demo/?judge=offline").content.decode()
    for label in ("Inference memory", "Instruction retention", "Self-coherence", "Voice editing"):
        assert label in page
    assert "Demo Speaking Voice (synthetic)" in page and "Audio output" in page

    # The task page of the audio-output system: user-turn players and the reply's audio.
    speaking = next(s for s in submissions if s.row_group == "audio-output")
    response = client.get(f"/submissions/{speaking.pk}/tasks/{task.task_id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("data-floorboard-player") == task.spec["last_user_turn"] + 1
    assert "User turn 1" in html and "Submitted reply (audio" in html
    assert task.spec["rubric"][0] in html

    # A task of more than ten items: its judgments in rubric order, item 2 before item 10.
    long = max(board.tasks.all(), key=lambda t: len(t.spec["rubric"]))
    assert len(long.spec["rubric"]) > 10
    html = client.get(f"/submissions/{speaking.pk}/tasks/{long.task_id}/").content.decode()
    shown = [int(n) for n in re.findall(r"rubric_item · rubric item (\d+):", html)]
    assert shown == list(range(len(long.spec["rubric"])))

    # A rating study of rubric items: met / not met per item, the judge's label beside it.
    study = study_create(
        plan=StudyPlan(
            name="Items",
            slug="items",
            benchmark=board,
            judge=offline,
            kind="rubric_item",
            strata=(speaking,),
            guideline_text="Decide whether the reply meets the item.",
            per_stratum=6,
            positive_label="met",
            negative_label="not met",
        )
    )
    items = list(Item.objects.filter(study=study))
    assert len(items) == 6
    specs = dict(board.tasks.values_list("task_id", "spec"))
    for item in items:
        assert specs[item.task_id]["rubric"][int(item.slot)] in item.prompt
        assert item.judge_label in ("met", "not met")
        assert item.clips and item.transcript

    # Slices by axis and by number of user turns are stored with every score.
    score = Score.objects.get(submission=speaking, judge=offline)
    names = set(score.slices["values"])
    assert {f"axis={axis}" for axis in AXES} <= names
    assert {name for name in names if name.startswith("user_turns=")} == {
        f"user_turns={k}" for k in {spec["last_user_turn"] for spec in specs.values()}
    }
