"""Time every agreement figure with bootstrap intervals over a synthetic study of 10,000 ratings.

The study: items in strata and batches of 30, three raters per item drawn from a pool, one gold
item per batch, a judge verdict on every item, 2% "can't judge" answers and a time per rating.
No database is used.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from annotation.stats import ItemInfo, Rating, agreement_compute

LABELS = ("consistent", "inconsistent")


def synthetic_study(
    *, ratings: int, overlap: int, raters: int, strata: int, batch_size: int, seed: int
) -> tuple[list[Rating], dict[int, ItemInfo]]:
    rng = np.random.default_rng(seed)
    n_items = -(-ratings // overlap)
    truth = (rng.random(n_items) < 0.45).astype(int)
    accuracy = rng.uniform(0.86, 0.97, raters)
    panel = np.argsort(rng.random((n_items, raters)), axis=1)[:, :overlap]
    right = rng.random((n_items, overlap)) < accuracy[panel]
    given = np.where(right, truth[:, None], 1 - truth[:, None])
    missing = rng.random((n_items, overlap)) < 0.02
    seconds = rng.lognormal(np.log(20.0), 0.5, (n_items, overlap))
    judge = np.where(rng.random(n_items) < 0.85, truth, 1 - truth)
    table = [
        Rating(
            item=i,
            rater=f"rater-{panel[i, k]:02d}",
            label=None if missing[i, k] else LABELS[given[i, k]],
            seconds=float(seconds[i, k]),
        )
        for i in range(n_items)
        for k in range(overlap)
    ][:ratings]
    items = {
        i: ItemInfo(
            judge=LABELS[judge[i]],
            stratum=f"setting-{i % strata:02d}",
            batch=i // batch_size,
            gold=LABELS[truth[i]] if i % batch_size == 0 else None,
        )
        for i in range(n_items)
    }
    return table, items


class Command(BaseCommand):
    help = __doc__.splitlines()[0]
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--ratings", type=int, default=10_000)
        parser.add_argument("--overlap", type=int, default=3)
        parser.add_argument("--raters", type=int, default=40)
        parser.add_argument("--strata", type=int, default=14)
        parser.add_argument("--batch-size", type=int, default=30)
        parser.add_argument("--resamples", type=int, default=2000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--repeat", type=int, default=5, help="timed runs after the first")

    def handle(
        self,
        *args,
        ratings,
        overlap,
        raters,
        strata,
        batch_size,
        resamples,
        seed,
        repeat,
        **options,
    ):
        if ratings < 1 or overlap < 1 or raters < overlap or strata < 1 or batch_size < 1:
            raise CommandError(
                "need ratings >= 1, overlap >= 1, raters >= overlap, strata and batch size >= 1"
            )
        table, items = synthetic_study(
            ratings=ratings,
            overlap=overlap,
            raters=raters,
            strata=strata,
            batch_size=batch_size,
            seed=seed,
        )

        def run(exclude=()):
            wall, cpu = time.perf_counter(), time.process_time()
            report = agreement_compute(
                ratings=table,
                items=items,
                labels=LABELS,
                exclude_raters=exclude,
                resamples=resamples,
                seed=seed,
            )
            return report, time.perf_counter() - wall, time.process_time() - cpu

        report, first_wall, first_cpu = run()
        timed = [run()[1:] for _ in range(repeat)]
        flagged = tuple(r.rater for r in report.raters if r.outlier)
        _, flagged_wall, flagged_cpu = run(flagged)
        overall = report.overall
        self.stdout.write(
            f"study: {len(table):,} ratings, {len(items):,} items, {raters} raters, "
            f"{len(report.by_stratum)} strata, {len(report.by_batch)} batches, "
            f"{sum(1 for i in items.values() if i.gold)} gold items"
        )
        self.stdout.write(f"alpha {overall.alpha}  kappa {overall.kappa}")
        self.stdout.write(f"raw agreement {overall.raw_agreement}  AC1 {overall.ac1}")
        self.stdout.write(
            f"all figures with {resamples:,}-resample bootstrap intervals (overall, per stratum, "
            f"per batch, per rater): first run {first_wall:.3f} s wall, {first_cpu:.3f} s CPU"
        )
        if timed:
            walls, cpus = zip(*timed, strict=True)
            self.stdout.write(
                f"median of {repeat} more runs: {statistics.median(walls):.3f} s wall, "
                f"{statistics.median(cpus):.3f} s CPU"
            )
        self.stdout.write(
            f"again without the {len(flagged)} flagged rater(s): {flagged_wall:.3f} s wall, "
            f"{flagged_cpu:.3f} s CPU"
        )
