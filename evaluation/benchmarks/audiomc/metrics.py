"""APR and ARS overall and per axis (SPEC §5), exact, with task-bootstrap intervals.

Over ALL dataset tasks T (not only the submitted ones); task t has n_t rubric items, m_t met:
- pass_t = 1 if a response exists and m_t = n_t, else 0; a task without a response has m_t = 0;
- APR = Σ pass_t / |T|; ARS = Σ (m_t / n_t) / |T| (each task weighs the same);
- per axis, the same over that axis's tasks; overall over all tasks (not the mean of the axes);
- diagnostic, not a paper metric: the item-level rate Σ m_t / Σ n_t.
An item is met only when its outcome is ``met``; unparseable, failed, pending and unjudged items
are not met. Failed, pending and unjudged items and missing responses make ``complete`` false;
parse failures do not (they are scored outcomes, SPEC §6 row 10).

Arithmetic is in fractions.Fraction. Every rate is stored as a float ``value`` (the exact value
rounded to the nearest double), an exact ``exact`` string "p/q" for ranking, and ``pct``: the
exact value times 100 rounded half up to 2 decimals.

Result structure (``aggregate``)::

    {"overall": GROUP, "by_axis": {axis: GROUP for the four axes},
     "audio_cue_split": null | {"audio_cue": GROUP, "semantic": GROUP, "relative_ars_gap": float},
     "diagnostics": {"missing_responses": [id], "judge_parse_failures": [ITEM],
                     "missing_judgments": [ITEM], "failed_items": [ITEM], "ignored_judgments": [..]},
     "complete": bool, "bootstrap": {method, unit, level, resamples, seed, generator}}
    GROUP = {"n": tasks, "n_pass": passing tasks, "responses": tasks with a response,
             "apr": {"count", "total", "value", "exact", "pct", "ci": [lo_pct, hi_pct]},
             "ars": {"sum", "total", "value", "exact", "pct", "ci": [lo_pct, hi_pct]},
             "rubric_items": Σ n_t, "rubric_items_met": Σ m_t,
             "rubric_item_rate": {"count", "total", "value", "exact", "pct"}}
    ITEM = {"id": task id, "rubric_index": 0-based}

A group without tasks has null value/exact/pct/ci. ``ars.sum`` is Σ m_t/n_t as "p/q".

Bootstrap (documented so that anyone can redraw it): BOOTSTRAP_SEED = 251214865 and
BOOTSTRAP_RESAMPLES = 10,000 (rather than 2,000: the 2.5% tail then rests on 250 resamples, so the
bounds barely move with the seed). For each group of n >= 1 tasks, ordered by task id (Python's
string order, so the order a dataset file or an upload lists them in does not matter), a fresh
``numpy.random.Generator(numpy.random.PCG64(BOOTSTRAP_SEED))`` draws
``idx = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))`` (requested 1,000 rows at a time,
which yields the same stream). Resample b's APR is the mean of pass_t over row b, its ARS the mean
of m_t/n_t over row b, both exact. The interval is the percentile interval at 95%: the 2.5th and
97.5th percentiles of the resampled values with numpy's default ("linear") rule, i.e. with
h = (B - 1) q and sorted values v, v[floor h] + (h - floor h)(v[floor h + 1] - v[floor h]),
computed exactly, then in percent rounded half up to 2 decimals.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import floor, lcm

import numpy as np

from .dataset import AXES, Task
from .judge import FAILED, MET, PENDING, UNPARSEABLE, ItemOutcome

BOOTSTRAP_SEED = 2512_14865  # the paper's arXiv number, fixed so intervals never move
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_LEVEL = Fraction(95, 100)
_DRAW_ROWS = 1_000

NO_RESPONSE = "no_response"  # item state of a task without a submitted reply
MISSING = "missing"  # item state of a submitted task's item with no judgment at all
INFERENCE_MEMORY = "INFERENCE_MEMORY"


@dataclass(frozen=True)
class TaskResult:
    """One task's scored items: item_states[i] is rubric item i's state."""

    task_id: str
    axis: str
    responded: bool
    item_states: tuple[str, ...]
    audio_cue: bool | None = None

    @property
    def n_items(self) -> int:
        return len(self.item_states)

    @property
    def met(self) -> int:
        return sum(state == MET for state in self.item_states) if self.responded else 0

    @property
    def passed(self) -> bool:
        return self.responded and self.met == self.n_items


def task_results(
    *,
    tasks: Sequence[Task],
    responded: Collection[str],
    outcomes: Mapping[tuple[str, int], ItemOutcome],
) -> list[TaskResult]:
    """Each dataset task with its items' states; outcomes of unsubmitted tasks are not read."""
    results = []
    for task in tasks:
        n_items = len(task.spec["rubric"])
        if task.task_id in responded:
            states = tuple(
                outcomes[(task.task_id, i)].state if (task.task_id, i) in outcomes else MISSING
                for i in range(n_items)
            )
        else:
            states = (NO_RESPONSE,) * n_items
        results.append(
            TaskResult(
                task.task_id,
                task.spec["axis"],
                task.task_id in responded,
                states,
                task.spec.get("audio_cue"),
            )
        )
    return results


def aggregate(
    results: Sequence[TaskResult],
    *,
    ignored_judgments: Iterable = (),
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict:
    """The results dict described in the module docstring."""

    def group(members: Sequence[TaskResult]) -> dict:
        return group_metrics(members, resamples=resamples, seed=seed)

    diagnostics = _diagnostics(results, list(ignored_judgments))
    return {
        "overall": group(results),
        "by_axis": {axis: group([r for r in results if r.axis == axis]) for axis in AXES},
        "audio_cue_split": _audio_cue_split(results, group),
        "diagnostics": diagnostics,
        "complete": not (
            diagnostics["missing_responses"]
            or diagnostics["missing_judgments"]
            or diagnostics["failed_items"]
        ),
        "bootstrap": {
            "method": "percentile",
            "unit": "task",
            "level": float(BOOTSTRAP_LEVEL),
            "resamples": resamples,
            "seed": seed,
            "generator": "numpy PCG64",
        },
    }


def group_metrics(
    members: Sequence[TaskResult],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict:
    n = len(members)
    n_pass = sum(r.passed for r in members)
    score_sum = sum((Fraction(r.met, r.n_items) for r in members), Fraction(0))
    items = sum(r.n_items for r in members)
    items_met = sum(r.met for r in members)
    apr_ci, ars_ci = bootstrap_intervals(members, resamples=resamples, seed=seed)
    return {
        "n": n,
        "n_pass": n_pass,
        "responses": sum(r.responded for r in members),
        "apr": {
            "count": n_pass,
            "total": n,
            **_rate(Fraction(n_pass, n) if n else None),
            "ci": apr_ci,
        },
        "ars": {
            "sum": _exact(score_sum),
            "total": n,
            **_rate(score_sum / n if n else None),
            "ci": ars_ci,
        },
        "rubric_items": items,
        "rubric_items_met": items_met,
        "rubric_item_rate": {
            "count": items_met,
            "total": items,
            **_rate(Fraction(items_met, items) if items else None),
        },
    }


def pct_half_up(value: Fraction) -> float:
    """value x 100, rounded half up (away from zero) to 2 decimals, on the exact value."""
    scaled = abs(value) * 10_000
    hundredths = (2 * scaled.numerator + scaled.denominator) // (2 * scaled.denominator)
    return (-hundredths if value < 0 else hundredths) / 100


def _exact(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _rate(value: Fraction | None) -> dict:
    if value is None:
        return {"value": None, "exact": None, "pct": None}
    return {"value": float(value), "exact": _exact(value), "pct": pct_half_up(value)}


# ---------------------------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------------------------


def bootstrap_intervals(
    members: Sequence[TaskResult], *, resamples: int, seed: int
) -> tuple[list[float] | None, list[float] | None]:
    """([lo, hi] APR, [lo, hi] ARS) in percent, as the module docstring documents."""
    n = len(members)
    if n == 0 or resamples <= 0:
        return None, None
    members = sorted(members, key=lambda r: r.task_id)
    # Integer weights keep every resample exact: m_t/n_t = w_t / D with D the lcm of the n_t.
    scale = lcm(*(r.n_items for r in members))
    passes = np.array([int(r.passed) for r in members], dtype=np.int64)
    weights = [r.met * (scale // r.n_items) for r in members]
    # int64 holds n * D for the real data (D = lcm(1..15) = 360360); otherwise Python integers.
    exact_dtype = np.int64 if n * scale < 2**62 else object
    weights = np.array(weights, dtype=exact_dtype)

    rng = np.random.Generator(np.random.PCG64(seed))
    pass_sums = np.empty(resamples, dtype=np.int64)
    score_sums = np.empty(resamples, dtype=exact_dtype)
    for start in range(0, resamples, _DRAW_ROWS):
        rows = min(_DRAW_ROWS, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        pass_sums[start : start + rows] = passes[idx].sum(axis=1)
        score_sums[start : start + rows] = weights[idx].sum(axis=1)
    apr = _percentile_interval(np.sort(pass_sums), Fraction(1, n))
    ars = _percentile_interval(np.sort(score_sums), Fraction(1, n * scale))
    return apr, ars


def ars_interval(
    shares: Sequence[Fraction], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> list[float] | None:
    """ARS's [lo, hi] in percent over tasks whose shares met (m_t / n_t) are given in task-id
    order: the draws and the percentile rule of bootstrap_intervals, so that a slice of the
    board holding an axis's tasks shows the axis column's own interval."""
    n = len(shares)
    if n == 0 or resamples <= 0:
        return None
    scale = lcm(*(share.denominator for share in shares))
    exact_dtype = np.int64 if n * scale < 2**62 else object
    weights = np.array([int(share * scale) for share in shares], dtype=exact_dtype)
    rng = np.random.Generator(np.random.PCG64(seed))
    score_sums = np.empty(resamples, dtype=exact_dtype)
    for start in range(0, resamples, _DRAW_ROWS):
        rows = min(_DRAW_ROWS, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        score_sums[start : start + rows] = weights[idx].sum(axis=1)
    return _percentile_interval(np.sort(score_sums), Fraction(1, n * scale))


def _percentile_interval(sorted_sums: np.ndarray, unit: Fraction) -> list[float]:
    tail = (1 - BOOTSTRAP_LEVEL) / 2
    return [pct_half_up(_linear_percentile(sorted_sums, q) * unit) for q in (tail, 1 - tail)]


def _linear_percentile(sorted_values: np.ndarray, q: Fraction) -> Fraction:
    """numpy's "linear" percentile, exactly: h = (B - 1) q, interpolate between neighbours."""
    h = (len(sorted_values) - 1) * q
    low = floor(h)
    below = Fraction(int(sorted_values[low]))
    if low + 1 >= len(sorted_values):
        return below
    above = Fraction(int(sorted_values[low + 1]))
    return below + (h - low) * (above - below)


# ---------------------------------------------------------------------------------------------
# Diagnostics and the audio-cue split
# ---------------------------------------------------------------------------------------------


def _diagnostics(results: Sequence[TaskResult], ignored: list) -> dict:
    def items(states: tuple[str, ...]) -> list[dict]:
        return [
            {"id": r.task_id, "rubric_index": i}
            for r in results
            if r.responded
            for i, state in enumerate(r.item_states)
            if state in states
        ]

    return {
        "missing_responses": [r.task_id for r in results if not r.responded],
        "judge_parse_failures": items((UNPARSEABLE,)),
        "missing_judgments": items((MISSING, PENDING)),
        "failed_items": items((FAILED,)),
        "ignored_judgments": ignored,
    }


def _audio_cue_split(results: Sequence[TaskResult], group) -> dict | None:
    """Inference-memory tasks with audio_cue true vs false; None when no task carries the flag."""
    flagged = [r for r in results if r.axis == INFERENCE_MEMORY and r.audio_cue is not None]
    if not flagged:
        return None
    cue = [r for r in flagged if r.audio_cue]
    semantic = [r for r in flagged if not r.audio_cue]
    gap = None
    if cue and semantic:
        ars_cue = sum((Fraction(r.met, r.n_items) for r in cue), Fraction(0)) / len(cue)
        ars_sem = sum((Fraction(r.met, r.n_items) for r in semantic), Fraction(0)) / len(semantic)
        if ars_sem:
            gap = float(1 - ars_cue / ars_sem)
    return {"audio_cue": group(cue), "semantic": group(semantic), "relative_ars_gap": gap}
