"""Synthetic MP-Bench result folders for any task list: test fixtures and benchmark input.

Each task gets an outcome drawn from a fixed cycle, so that the expected Table 3 can be counted
from the outcomes alone. Answers carry a marker the local test judge recognises.
"""

from __future__ import annotations

import json
from pathlib import Path

GOOD = "ANSWER-OK"
BAD = "ANSWER-BAD"

# outcome -> (words spoken after the input ends, or during it; delay after the input end)
OUTCOMES = ("good", "bad", "silent", "early", "good_slow")
DELAY = {"good": 1.25, "bad": 0.5, "good_slow": 3.0}


def outcome_for(index: int) -> str:
    return OUTCOMES[index % len(OUTCOMES)]


def _words(texts: list[str], start: float, step: float = 0.4) -> list[dict]:
    return [
        {"text": text, "timestamp": [round(start + i * step, 2), round(start + i * step + 0.3, 2)]}
        for i, text in enumerate(texts)
    ]


def write_task_folder(folder: Path, *, index: int, outcome: str, input_words: int = 40) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    spoken = _words([f"w{index}_{i}" for i in range(input_words)], 0.0)
    input_end = spoken[-1]["timestamp"][1]
    if outcome in ("good", "good_slow"):
        response = _words(["Hi", "there"], 0.5) + _words(
            [GOOD, "Ben", "is", "right"], input_end + DELAY[outcome]
        )
    elif outcome == "bad":
        response = _words([BAD, "no", "idea"], input_end + DELAY[outcome])
    elif outcome == "early":
        response = _words(["Hi", "there", "friends"], 1.0)
    else:
        response = []
    (folder / "all_stitched.json").write_text(
        json.dumps({"text": " ".join(w["text"] for w in spoken), "chunks": spoken})
    )
    (folder / "response.json").write_text(
        json.dumps({"text": " ".join(w["text"] for w in response), "chunks": response})
    )


def write_bundle_tree(root: Path, task_ids: list[str], *, nest: str = "run/asr") -> dict[str, str]:
    """One folder per task under root/nest; returns task id -> outcome."""
    outcomes = {}
    for index, task_id in enumerate(sorted(task_ids)):
        outcomes[task_id] = outcome_for(index)
        write_task_folder(root / nest / task_id, index=index, outcome=outcomes[task_id])
    return outcomes
