"""Benchmark comparisons of two systems and slices of a large board.

On an imported benchmark (its real tasks and their slice attributes), --systems scored and
published submissions are stored as the pipeline stores them: results, per-task contributions
and every slice's results, made from seeded random per-task outcomes with every metric counted
on every task (an upper bound on the work). Everything is written in one transaction that is
rolled back at the end.

Reported, as p50 and p95 over --repeat runs:
- the comparison page of two submissions (10,000 paired bootstrap draws): cold (the cache
  cleared before each request, so the comparison is computed) and warm (cached under both
  scores' state), and its API;
- the board of every system on one slice: the rows read, their numbers swapped for the slice's
  and ranked again, with the rank ranges (paired exact tests of every pair of rows).
"""

from __future__ import annotations

import random
import statistics
import time

from django.core.cache import cache
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test import Client
from django.urls import reverse

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark, Score, Submission, System
from evaluation.slices import (
    Contributions,
    all_columns,
    contributions_json,
    results_on,
    slice_results,
)
from leaderboard.selectors import BoardSort, leaderboard_entries
from leaderboard.selectors_compare import board_slice, slice_choices, task_attributes
from leaderboard.selectors_rows import sliced_entries, with_rank_ranges


class Rollback(Exception):
    pass


def _percentiles(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return f"p50 {1000 * statistics.median(values):.1f} ms, p95 {1000 * p95:.1f} ms"


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="the slug of an imported benchmark")
        parser.add_argument("--systems", type=int, default=500)
        parser.add_argument("--repeat", type=int, default=20)
        parser.add_argument(
            "--slice", dest="requested", default="", help="attribute=value (default: the first)"
        )

    def handle(self, *args, benchmark, systems, repeat, requested, **options):
        found = Benchmark.objects.filter(slug=benchmark).first()
        if found is None:
            raise CommandError(f"no benchmark {benchmark!r}: import it first")
        try:
            with transaction.atomic():
                self._run(found, systems, repeat, requested)
                raise Rollback
        except Rollback:
            pass

    def _seed(self, benchmark: Benchmark, systems: int):
        plugin = get_plugin(benchmark.plugin)
        judge = benchmark.judges.order_by("-is_official", "slug").first()
        tasks = list(
            benchmark.tasks.filter(held_out=False)
            .order_by("task_id")
            .values_list("task_id", flat=True)
        )
        attributes = task_attributes(benchmark=benchmark)
        columns = all_columns(plugin)
        groups = [group.key for group in plugin.row_groups] or [""]
        started = time.perf_counter()
        ids = []
        for i in range(systems):
            rng = random.Random(i)
            skill = rng.uniform(0.2, 0.9)
            per_task = []
            for task in tasks:
                found = {}
                for column in columns:
                    if column.metric.type == "rate":
                        found[column.key] = (int(rng.random() < skill), 1)
                    else:
                        found[column.key] = (rng.uniform(0.1, 3.0), 1)
                per_task.append((task, found))
            stored = contributions_json(per_task)
            contributions = Contributions.from_json(stored)
            submission = Submission.objects.create(
                benchmark=benchmark,
                system=System.objects.create(name=f"bench-compare-{i:04d}"),
                judge=judge,
                row_group=groups[i % len(groups)],
                status=Submission.Status.SCORED,
                is_published=True,
            )
            Score.objects.create(
                submission=submission,
                judge=judge,
                results=results_on(plugin, contributions, tasks),
                contributions=stored,
                slices=slice_results(plugin, contributions, attributes),
            )
            ids.append(submission.pk)
        self.stdout.write(
            f"seeded {systems} scored systems on {len(tasks)} tasks of {benchmark.slug} "
            f"in {time.perf_counter() - started:.0f} s"
        )
        return judge, ids, tasks

    def _run(self, benchmark: Benchmark, systems: int, repeat: int, requested: str):
        judge, ids, tasks = self._seed(benchmark, systems)
        client = Client(HTTP_HOST="localhost")
        page = (
            reverse("compare", args=[benchmark.slug]) + f"?a={ids[0]}&b={ids[1]}&judge={judge.slug}"
        )
        api = (
            reverse("api-benchmark-compare", args=[benchmark.slug])
            + f"?a={ids[0]}&b={ids[1]}&judge={judge.slug}"
        )

        def timed(url: str, *, cold: bool) -> list[float]:
            found = []
            for _ in range(repeat):
                if cold:
                    cache.clear()
                    task_attributes(benchmark=benchmark)  # cached apart, under the tasks
                started = time.perf_counter()
                response = client.get(url)
                found.append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise CommandError(f"{url}: {response.status_code} {response.content[:300]}")
            return found

        self.stdout.write(f"comparison of two {len(tasks)}-task submissions, {repeat} runs each:")
        self.stdout.write(
            f"  page, computed (cache cleared): {_percentiles(timed(page, cold=True))}"
        )
        timed(page, cold=False)
        self.stdout.write(
            f"  page, cached:                   {_percentiles(timed(page, cold=False))}"
        )
        self.stdout.write(
            f"  API, computed (cache cleared):  {_percentiles(timed(api, cold=True))}"
        )

        choices = slice_choices(benchmark=benchmark)
        if not choices:
            return
        chosen_text = requested or f"{choices[0].attribute}={choices[0].values[0][0]}"
        chosen = board_slice(benchmark=benchmark, requested=chosen_text)
        sort = BoardSort()
        entries = leaderboard_entries(benchmark=benchmark, judge=judge, sort=sort)
        slice_times, range_times = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            shown = sliced_entries(
                entries, benchmark=benchmark, judge=judge, chosen=chosen, sort=sort, split=""
            )
            slice_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            with_rank_ranges(
                shown, benchmark=benchmark, judge=judge, split="", grouped=True, chosen=chosen
            )
            range_times.append(time.perf_counter() - started)
        attributes = task_attributes(benchmark=benchmark)
        count = sum(1 for t in tasks if attributes.get(t, {}).get(chosen.attribute) == chosen.value)
        self.stdout.write(
            f"board of {len(entries)} rows on the slice {chosen_text} ({count} tasks):"
        )
        self.stdout.write(f"  numbers swapped and ranked again: {_percentiles(slice_times)}")
        self.stdout.write(f"  rank ranges (every pair tested):  {_percentiles(range_times)}")
