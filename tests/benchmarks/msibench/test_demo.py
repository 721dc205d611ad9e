"""The demo: an invented release with clips, stand-in templates written by code (never the
harness's), invented systems in both languages (one a zip of two files), scored by the offline
judge, which says it is no model."""

from __future__ import annotations

import pytest

from evaluation.benchmarks.msibench import plugin
from evaluation.models import Judgment, Score, Submission
from evaluation.services import benchmark_import, submission_create
from evaluation.services.work import inline

from .conftest import SHARED_TEMPLATES

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_board_scores_every_invented_system(tmp_path, client):
    source = tmp_path / "source"
    plugin.write_demo_source(source)
    if (SHARED_TEMPLATES / "judge_system.j2").is_file():
        harness = (SHARED_TEMPLATES / "judge_system.j2").read_text("utf-8")
        assert (source / "templates" / "judge_system.j2").read_text("utf-8") != harness
    summary = benchmark_import(
        slug="msi-bench-demo", directory=source, plugin="msi-bench", is_demo=True
    )
    assert summary.tasks_created > 0 and summary.assets_stored > 0
    board = summary.benchmark
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
    submissions = Submission.objects.filter(benchmark=board)
    assert [s.status for s in submissions] == ["scored"] * len(runs)
    languages = {
        s.system.name: sorted(Score.objects.get(submission=s).results) for s in submissions
    }
    assert languages == {
        "Demo Careful Agent": ["en", "zh"],
        "Demo Hasty Agent": ["en", "zh"],
        "Demo Flaky Agent": ["en"],
        "Demo Quiet Agent": ["zh"],
    }
    reasons = set(Judgment.objects.values_list("reasoning", flat=True))
    assert reasons and all("not an LLM" in reason for reason in reasons)
    careful = Score.objects.get(submission__system__name="Demo Careful Agent").results
    quiet = Score.objects.get(submission__system__name="Demo Quiet Agent").results
    assert careful["zh"]["apr"]["pct"] > quiet["zh"]["apr"]["pct"] == 0.0
    page = client.get("/benchmarks/msi-bench-demo/?split=zh&judge=offline").content.decode()
    assert "Demo Quiet Agent" in page and "Demo Flaky Agent" not in page
    assert "offline judge" in page
