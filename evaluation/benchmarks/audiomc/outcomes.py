"""From what the engine stores to what metrics.py scores, and what one task adds to each metric
of the board (the slices and paired comparisons recompute from those). Pure.

A rubric item's stored slot becomes its state: answered and parsed -> met / not met; answered
three times without a parseable answer -> unparseable (not met, a scored outcome); a call that
failed for good -> failed (not met until retried; the result is incomplete); still waiting ->
pending; no slot at all -> missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from evaluation.benchmarks.base import JudgedSlot, TaskOutcome

from .dataset import AXES
from .judge import FAILED, JUDGE_KIND, MET, NOT_MET, PENDING, UNPARSEABLE
from .judging import reply_of
from .metrics import MISSING, NO_RESPONSE, TaskResult, aggregate, pct_half_up

# ARS weighs every task the same: a task adds (m/n x SCALE, SCALE), an integer pair for every
# task of up to 15 items (the dataset's maximum; lcm(1..15) = 360360), so sums stay exact.
ARS_SCALE = 360_360
SCOPES = ("overall", *(f"by_axis.{axis}" for axis in AXES))


def item_state(slot: JudgedSlot | None) -> str:
    if slot is None:
        return MISSING
    if slot.state in ("done", "fixed"):
        if slot.output is None:
            return UNPARSEABLE
        return MET if slot.output.get("criteria_met") is True else NOT_MET
    if slot.state == "failed":
        return FAILED
    return PENDING


def task_result(outcome: TaskOutcome) -> TaskResult:
    spec = outcome.spec
    n_items = len(spec["rubric"])
    responded = reply_of(outcome.data) is not None
    if responded:
        states = tuple(
            item_state(outcome.judged.get((JUDGE_KIND, str(index)))) for index in range(n_items)
        )
    else:
        states = (NO_RESPONSE,) * n_items
    return TaskResult(outcome.task_id, spec["axis"], responded, states, spec.get("audio_cue"))


def results_of(outcomes: Sequence[TaskOutcome]) -> dict:
    """metrics.aggregate over these tasks (all of the benchmark's, or a slice of them)."""
    return aggregate([task_result(outcome) for outcome in outcomes])


def contributions(outcome: TaskOutcome) -> dict:
    """APR: (passed, 1); ARS: (m/n, 1) scaled to integers; overall and the task's axis. The
    item-level rate (a diagnostic) adds (m, n)."""
    result = task_result(outcome)
    passed = int(result.passed)
    share = Fraction(result.met, result.n_items) * ARS_SCALE
    ars = (int(share) if share.denominator == 1 else float(share), ARS_SCALE)
    found: dict = {}
    for scope in ("overall", f"by_axis.{result.axis}"):
        found[f"{scope}.apr"] = (passed, 1)
        found[f"{scope}.ars"] = ars
    found["overall.rubric_item_rate"] = (result.met, result.n_items)
    return found


def share_met(numerator: float, denominator: float) -> Fraction:
    """A task's share of rubric items met (m / n) back from its ARS contribution."""
    whole = round(numerator)
    if abs(numerator - whole) <= 1e-6:
        return Fraction(whole, round(denominator))
    # A share whose scaled value is not whole: n has a prime factor above 13 (n <= 10,000).
    return Fraction(numerator / denominator).limit_denominator(10_000)


def exact_pct(numerator: float, denominator: float) -> float | None:
    """Percent, 2 decimals, half up on the exact ratio of two summed contributions."""
    if not denominator:
        return None
    num, den = round(numerator), round(denominator)
    if abs(numerator - num) > 1e-6 or abs(denominator - den) > 1e-6:
        return pct_half_up(Fraction(numerator) / Fraction(denominator))
    return pct_half_up(Fraction(num, den))


def metric_counts(key: str, results: Mapping | None) -> tuple[float, int] | None:
    """(count, total) behind a metric: for ARS the sum of the tasks' fractions met and the
    number of tasks (ARS = sum / tasks)."""
    node: object = results
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return None
    if key.endswith(".ars"):
        total, exact = node.get("total"), node.get("sum")
        if isinstance(total, int) and isinstance(exact, str):
            return round(float(Fraction(exact)), 4), total
        return None
    count, total = node.get("count"), node.get("total")
    if isinstance(count, int) and isinstance(total, int):
        return count, total
    return None
