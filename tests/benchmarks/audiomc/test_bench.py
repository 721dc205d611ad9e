"""The plain-Python reference pass agrees with a count made here from the offline verdicts."""

from __future__ import annotations

import json
from fractions import Fraction

from evaluation.benchmarks.audiomc.demo import bench
from evaluation.benchmarks.audiomc.demo.offline import offline_verdict


def test_reference_pass_counts_what_the_judge_said(tmp_path):
    paths = bench.write_synthetic_run(tmp_path, n_tasks=44, seed=3)
    # Judgments without noise: every item decided by the offline verdict.
    tasks = [json.loads(line) for line in paths["dataset"].read_text().splitlines()]
    replies = {
        line["id"]: line["response"]
        for line in map(json.loads, paths["responses"].read_text().splitlines())
    }
    rows = []
    passes, scores = 0, Fraction(0)
    for record in tasks:
        items = json.loads(record["rubric"])
        verdicts = [
            offline_verdict(response=replies[record["id"]], rubric_item=i)[0] for i in items
        ]
        passes += all(verdicts)
        scores += Fraction(sum(verdicts), len(items))
        rows += [
            {"id": record["id"], "rubric_index": i, "raw": json.dumps({"criteria_met": v})}
            for i, v in enumerate(verdicts)
        ]
    paths["judgments"].write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = bench.reference_pass(**paths)
    assert Fraction(result["overall"]["apr"]["exact"]) == Fraction(passes, 44)
    assert Fraction(result["overall"]["ars"]["exact"]) == scores / 44
    assert result["complete"] is True


def test_the_timing_command_reports_its_figures(tmp_path, capsys):
    report = bench.main(["--tasks", "60", "--workdir", str(tmp_path)])
    assert report["tasks"] == 60 and report["judgment_lines"] >= report["rubric_items"]
    assert report["pass_seconds"] > 0 and report["aggregate_peak_bytes"] > 0
    assert json.loads(capsys.readouterr().out) == report
