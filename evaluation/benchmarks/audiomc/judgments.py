"""Stored judge outputs, the scorer's third input (SPEC §4, §6 rows 9-11).

One JSON line per attempt: ``{"id", "rubric_index", "attempt" (int >= 0, default 0), "raw"}``,
``raw`` the judge's completion text or null for a call that failed for good.
- a malformed line, or a duplicate (id, rubric_index, attempt): the file is rejected, each
  problem with its line and field (row 9);
- an unknown id, an id without a response, or a rubric_index out of range: the line is ignored
  and listed in ``ignored`` with its line and reason (row 11).
Each item's attempts are then decided by judge.decide_item.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .dataset import Problem, Task
from .judge import Attempt, ItemOutcome, decide_item


class JudgmentsError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "; ".join(str(p) for p in problems[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__(f"judge outputs rejected: {shown}{more}")


@dataclass(frozen=True)
class StoredJudgments:
    attempts: dict[tuple[str, int], list[Attempt]]
    outcomes: dict[tuple[str, int], ItemOutcome]
    ignored: list[dict]  # {"line", "id", "rubric_index", "reason"}


def _reject_constant(token: str):
    raise ValueError(f"{token} is not JSON")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_judgments(
    lines: Iterable[str],
    *,
    tasks: Sequence[Task],
    responded: Collection[str],
    file_name: str = "judgments.jsonl",
) -> StoredJudgments:
    sizes = {task.task_id: len(task.spec["rubric"]) for task in tasks}
    problems: list[Problem] = []
    attempts: dict[tuple[str, int], list[Attempt]] = {}
    first_line: dict[tuple[str, int, int], int] = {}
    ignored: list[dict] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"

        def problem(field: str, message: str, where: str = where) -> None:
            problems.append(Problem(file_name, where, field, message))

        try:
            record = json.loads(line, parse_constant=_reject_constant)
        except ValueError as exc:
            problem("", f"not valid JSON ({exc})")
            continue
        if not isinstance(record, dict):
            problem("", "not a JSON object")
            continue
        task_id, index = record.get("id"), record.get("rubric_index")
        attempt, raw = record.get("attempt", 0), record.get("raw")
        bad = False
        if not isinstance(task_id, str):
            problem("id", "must be a string")
            bad = True
        if not _is_int(index):
            problem("rubric_index", "must be an integer")
            bad = True
        if not _is_int(attempt) or attempt < 0:
            problem("attempt", "must be an integer >= 0")
            bad = True
        if "raw" not in record:
            problem("raw", "missing (null for a failed call)")
            bad = True
        elif raw is not None and not isinstance(raw, str):
            problem("raw", "must be a string or null")
            bad = True
        if bad:
            continue
        key = (task_id, index, attempt)
        if key in first_line:
            problem(
                "attempt",
                f"duplicate (id, rubric_index, attempt) {list(key)} "
                f"(first on line {first_line[key]})",
            )
            continue
        first_line[key] = number
        reason = None
        if task_id not in sizes:
            reason = "unknown id"
        elif task_id not in responded:
            reason = "id without a response"
        elif not 0 <= index < sizes[task_id]:
            reason = "rubric_index out of range"
        if reason:
            ignored.append({"line": number, "id": task_id, "rubric_index": index, "reason": reason})
            continue
        attempts.setdefault((task_id, index), []).append(Attempt(attempt, raw))
    if problems:
        raise JudgmentsError(problems)
    outcomes = {item: decide_item(found) for item, found in attempts.items()}
    return StoredJudgments(attempts=attempts, outcomes=outcomes, ignored=ignored)


def read_judgments_file(
    path: Path, *, tasks: Sequence[Task], responded: Collection[str]
) -> StoredJudgments:
    with Path(path).open(encoding="utf-8-sig") as handle:
        return read_judgments(handle, tasks=tasks, responded=responded, file_name=Path(path).name)
