"""MP-Bench as the workload of bench_overhead (config/devtools/): the synthetic run written as
upload folders, the judge's answers read from each request's bytes, and the plain-Python pass's
judge requests and table, computed here with the benchmark's own rules and no database."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import detection, scoring
from . import synthetic

PLUGIN = "mp-bench"
# The checkout bench_overhead reads by default: ../shared/benchmarks/<CHECKOUT>.
CHECKOUT = "mpbench"
SCHEMA_NAME = "mpbench_eval"


def verdict(kind: str, raw_output: str) -> bool | None:
    """The judge's verdict in an answer, as the benchmark parses it."""
    return scoring.parse_verdict(kind, raw_output)[0]


def answer(content: str) -> str:
    """The judge's answer, read from the request itself: the same for the same bytes, true for
    about half of them, so that a verdict put on the wrong task or kind changes the results."""
    verdict = hashlib.sha256(content.encode()).digest()[0] < 128
    return json.dumps(
        {"correct": verdict, "consistent": verdict, "reasoning": "", "extracted_name": None}
    )


def write_run(tree: Path, task_ids: list[str], marker: str) -> None:
    for index, task_id in enumerate(sorted(task_ids)):
        synthetic.write_task_folder(
            tree / task_id, index=index, outcome=synthetic.outcome_for(index), input_words=100
        )
        response = tree / task_id / "response.json"
        data = json.loads(response.read_text())
        if data["chunks"]:
            # Responses of this run's own: where the agent spoke, no judgment is shared with
            # another run.
            data["chunks"][-1]["text"] += f" {marker}"
            data["text"] += f" {marker}"
            response.write_text(json.dumps(data))


def requests(tree: Path, tasks: dict, prompts: dict) -> tuple[dict, list]:
    """Detection over a run's task folders and the judge requests it leads to: what was found
    for each task, and [(task id, kind, prompt, schema)]."""
    evidence = {t: detection.collect_evidence(*detection.directory_reader(tree / t)) for t in tasks}
    half = detection.probe_half_duplex(evidence.values()).is_half_duplex
    requests, found = [], {}
    for task_id, spec in tasks.items():
        found[task_id] = detection.detect(evidence[task_id], half_duplex=half)
        task = scoring.TaskSpec.from_spec(task_id, spec)
        for kind in scoring.kinds_for(task):
            response = scoring.response_for(
                kind, full_text=found[task_id].full_text, post_text=found[task_id].post_text
            )
            if not scoring.skips_judge(kind, response):
                prompt = scoring.build_prompt(prompts[kind].template, kind, task, response)
                requests.append((task_id, kind, prompt, prompts[kind].schema))
    return found, requests


def results(tasks: dict, found: dict, verdicts: dict) -> dict:
    """The benchmark's table from what detection found and the verdicts, task by task."""
    return scoring.aggregate(
        scoring.TaskOutcome(
            scoring.TaskSpec.from_spec(t, s), found[t].spoke, found[t].latency, verdicts[t]
        )
        for t, s in tasks.items()
    )
