"""Writes of held-out tasks: staff mark them (manage.py held_out), and every score of the
benchmark is aggregated again (evaluation/held_out.py says what held out means)."""

from __future__ import annotations

import random
from collections.abc import Iterable

from django.db import transaction

from evaluation.held_out import held_out_ids
from evaluation.models import Benchmark, Score, Task
from evaluation.services.pipeline import submission_aggregate


class HeldOutError(ValueError):
    pass


def held_out_mark(
    *,
    benchmark: Benchmark,
    task_ids: Iterable[str] | None = None,
    fraction: float | None = None,
    seed: int | None = None,
    clear: bool = False,
) -> list[str]:
    """Mark tasks held out, by id or as a seeded random fraction of the benchmark's tasks
    (random.Random(seed).sample over the task ids in order); clear=True first unmarks all.
    Then every score of the benchmark is aggregated again from its stored judgments (no judge
    is called). Returns the held-out task ids."""
    every = list(benchmark.tasks.order_by("task_id").values_list("task_id", flat=True))
    if task_ids is not None and fraction is not None:
        raise HeldOutError("give task ids or a fraction, not both")
    chosen: list[str] = []
    if task_ids is not None:
        chosen = sorted(set(task_ids))
        unknown = sorted(set(chosen) - set(every))
        if unknown:
            raise HeldOutError(
                f"{benchmark.slug} has no task {', '.join(unknown[:5])}"
                + (f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else "")
            )
    elif fraction is not None:
        if not 0 < fraction < 1:
            raise HeldOutError(f"the fraction must be between 0 and 1, got {fraction}")
        if seed is None:
            raise HeldOutError("a random fraction needs a seed, so that it can be reproduced")
        chosen = sorted(random.Random(seed).sample(every, k=round(fraction * len(every))))
    with transaction.atomic():
        tasks = Task.objects.filter(benchmark=benchmark)
        if clear:
            tasks.update(held_out=False)
        tasks.filter(task_id__in=chosen).update(held_out=True)
    held_out_rescore(benchmark=benchmark)
    return sorted(held_out_ids(benchmark=benchmark))


def held_out_rescore(*, benchmark: Benchmark) -> int:
    """Aggregate every score of the benchmark again (public and held-out results apart)."""
    scores = Score.objects.filter(submission__benchmark=benchmark).select_related(
        "submission__benchmark", "judge"
    )
    count = 0
    for score in scores.iterator(chunk_size=50):
        with transaction.atomic():
            submission_aggregate(submission=score.submission, judge=score.judge)
        count += 1
    return count
