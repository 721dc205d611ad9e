"""The plain-Python reference pass: dataset + submission + stored judge outputs -> metrics.

No database, no Django: the yardstick the site's aggregation is measured against. Run

    python -m evaluation.benchmarks.audiomc.demo.bench [--tasks 452] [--workdir DIR]

to write a synthetic full-size set (452 tasks, 1,712 items) and print the pass's wall time and
peak traced memory, for the whole pass and for the aggregation step alone, as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

from ..dataset import read_dataset
from ..judgments import read_judgments_file
from ..metrics import aggregate, task_results
from ..responses import parse_submission
from .synthetic import (
    responses_jsonl,
    synthetic_judgments,
    synthetic_records,
    synthetic_responses,
    write_jsonl_export,
)


def reference_pass(
    *, dataset: Path, responses: Path, judgments: Path, output_modality: str = "text"
) -> dict:
    """The results dict of metrics.aggregate for one submission, from files alone."""
    tasks = read_dataset(dataset).tasks
    submission = parse_submission(
        Path(responses).read_bytes(),
        task_ids=[task.task_id for task in tasks],
        output_modality=output_modality,
        file_name=Path(responses).name,
    )
    stored = read_judgments_file(judgments, tasks=tasks, responded=submission.responses)
    results = task_results(tasks=tasks, responded=submission.responses, outcomes=stored.outcomes)
    return aggregate(results, ignored_judgments=stored.ignored)


def write_synthetic_run(directory: Path, *, n_tasks: int = 452, seed: int = 0) -> dict[str, Path]:
    """A transcripts-only dataset, a strong submission and its judge outputs under directory."""
    directory = Path(directory)
    records = synthetic_records(n_tasks, seed=seed)
    dataset = write_jsonl_export(records, directory / "dataset")
    tasks = read_dataset(dataset).tasks
    lines = synthetic_responses(tasks, "strong", seed=seed)
    responses = directory / "responses.jsonl"
    responses.write_text(responses_jsonl(lines), encoding="utf-8")
    replies = {line["id"]: line["response"] or "" for line in lines}
    judgments = directory / "judgments.jsonl"
    with judgments.open("w", encoding="utf-8") as handle:
        for row in synthetic_judgments(tasks, replies, seed=seed):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"dataset": dataset, "responses": responses, "judgments": judgments}


def _measured(function):
    tracemalloc.start()
    started = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=452)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        paths = write_synthetic_run(args.workdir or Path(scratch), n_tasks=args.tasks)
        result, seconds, peak = _measured(lambda: reference_pass(**paths))
        tasks = read_dataset(paths["dataset"]).tasks
        submission = parse_submission(
            paths["responses"].read_bytes(),
            task_ids=[t.task_id for t in tasks],
            output_modality="text",
        )
        stored = read_judgments_file(
            paths["judgments"], tasks=tasks, responded=submission.responses
        )
        results = task_results(
            tasks=tasks, responded=submission.responses, outcomes=stored.outcomes
        )
        _, agg_seconds, agg_peak = _measured(lambda: aggregate(results))
    report = {
        "tasks": result["overall"]["n"],
        "rubric_items": result["overall"]["rubric_items"],
        "judgment_lines": sum(len(a) for a in stored.attempts.values()),
        "pass_seconds": round(seconds, 4),
        "pass_peak_bytes": peak,
        "aggregate_seconds": round(agg_seconds, 4),
        "aggregate_peak_bytes": agg_peak,
        "apr_pct": result["overall"]["apr"]["pct"],
        "ars_pct": result["overall"]["ars"]["pct"],
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
