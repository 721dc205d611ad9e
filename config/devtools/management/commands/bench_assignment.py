"""Next-item assignment latency with many raters at once, on PostgreSQL.

Builds a throw-away study (its own benchmark, submissions and items; removed afterwards unless
--keep), then starts one process per rater (as separate web workers would be), each on its own
database connection. Every rater asks for its next item (claiming a new batch when the last one
is done) and submits an answer, until nothing is left. Reports the latency of the next-item
call (median, p95, p99, max), separately for calls that claimed a batch, and of submits, and
checks afterwards that no item got more than `overlap` ratings.
"""

from __future__ import annotations

import multiprocessing
import random
import secrets
import statistics
import time
from collections import Counter

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, connections, transaction

from annotation import assignment
from annotation.models import Item, Rater, Rating, Study
from annotation.services import guideline_publish, rater_invite, study_set_status
from evaluation.benchmarks import registry
from evaluation.models import Benchmark, Judge, Submission, System


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def _rate(rater_id: int, think: float, start, results) -> None:
    connections.close_all()  # never share the parent's connection
    next_ms, claim_ms, submit_ms = [], [], []
    errors = []
    try:
        rater = Rater.objects.select_related("study").get(pk=rater_id)
        labels = [*rater.study.labels, assignment.MISSING]
        pause = random.Random(rater_id)
        start.wait()
        batch = None
        while True:
            began = time.perf_counter()
            current = assignment.rater_current(rater=rater, start=True)
            spent = (time.perf_counter() - began) * 1000
            if current is None:
                break
            (claim_ms if current.batch_id != batch else next_ms).append(spent)
            batch = current.batch_id
            if think:
                time.sleep(pause.uniform(0.5 * think, 1.5 * think))  # listening and deciding
            began = time.perf_counter()
            assignment.assignment_submit(
                rater=rater, code=current.code, label=labels[current.position % len(labels)]
            )
            submit_ms.append((time.perf_counter() - began) * 1000)
    except Exception as error:  # reported by the parent
        errors.append(f"{type(error).__name__}: {error}")
    finally:
        connections.close_all()
        results.put((rater_id, next_ms, claim_ms, submit_ms, errors))


class Command(BaseCommand):
    help = "Measure next-item assignment latency with concurrent raters (PostgreSQL)."

    def add_arguments(self, parser):
        parser.add_argument("--raters", type=int, default=50)
        parser.add_argument("--strata", type=int, default=12)
        parser.add_argument("--per-stratum", type=int, default=50)
        parser.add_argument("--overlap", type=int, default=3)
        parser.add_argument("--batch-size", type=int, default=30)
        parser.add_argument(
            "--think",
            type=float,
            default=0.0,
            help="seconds each rater spends on an item (±50%%); 0 asks as fast as possible",
        )
        parser.add_argument("--keep", action="store_true", help="keep the study afterwards")

    def handle(
        self, *args, raters, strata, per_stratum, overlap, batch_size, think, keep, **options
    ):
        if connection.vendor != "postgresql":
            raise CommandError(
                "bench_assignment measures row locking on PostgreSQL: set DATABASE_URL=postgres://..."
            )
        if min(raters, strata, per_stratum, overlap, batch_size) < 1:
            raise CommandError("every count must be at least 1")
        tag = f"bench-assignment-{secrets.token_hex(4)}"
        study = self._build(tag, strata, per_stratum, overlap, batch_size)
        pool = [rater_invite(study=study, name=f"bench {n + 1}") for n in range(raters)]
        items = study.items.count()
        self.stdout.write(
            f"study {tag}: {items} items ({strata} strata × {per_stratum}), overlap {overlap}, "
            f"batches of {batch_size}, {raters} raters in {raters} processes, "
            f"{think:g} s per item"
        )
        try:
            self._race(study, pool, items, overlap, think)
        finally:
            if not keep:
                self._remove(study, tag)

    def _build(self, tag, strata, per_stratum, overlap, batch_size) -> Study:
        """A study whose items are made directly: assignment does not depend on what is rated,
        so the items carry a line of text each and no audio."""
        plugin = next(iter(registry().values()))
        with transaction.atomic():
            benchmark = Benchmark.objects.create(slug=tag, name=tag, plugin=plugin.slug)
            judge = Judge.objects.create(
                benchmark=benchmark, slug="bench", name="bench", provider="offline"
            )
            study = Study.objects.create(
                name=tag,
                slug=tag,
                benchmark=benchmark,
                judge=judge,
                kind="bench",
                per_stratum=per_stratum,
                overlap=overlap,
                batch_size=batch_size,
            )
            guideline_publish(study=study, text="bench")
            order = random.Random(tag)
            items = []
            for s in range(strata):
                system = System.objects.create(name=f"{tag} system {s}")
                submission = Submission.objects.create(
                    benchmark=benchmark, system=system, judge=judge, status="scored"
                )
                study.strata.add(submission)
                items += [
                    Item(
                        study=study,
                        code=secrets.token_hex(8),
                        stratum=submission,
                        task_id=f"item-{s}-{n}",
                        shuffle_key=order.randrange(1, 2**62),
                        transcript=[{"speaker": "A", "text": "a line"}],
                        response_text="a reply",
                    )
                    for n in range(per_stratum)
                ]
            Item.objects.bulk_create(items)
        return study_set_status(study=study, status=Study.Status.OPEN)

    def _race(self, study: Study, pool: list[Rater], items: int, overlap: int, think: float):
        context = multiprocessing.get_context("fork")
        start, results = context.Event(), context.Queue()
        connections.close_all()
        workers = [context.Process(target=_rate, args=(r.pk, think, start, results)) for r in pool]
        for worker in workers:
            worker.start()
        time.sleep(1.0)  # let every process connect and wait at the start line
        began = time.perf_counter()
        start.set()
        collected = [results.get(timeout=3600) for _ in workers]
        wall = time.perf_counter() - began
        for worker in workers:
            worker.join(60)
        next_ms = [v for row in collected for v in row[1]]
        claim_ms = [v for row in collected for v in row[2]]
        submit_ms = [v for row in collected for v in row[3]]
        errors = [e for row in collected for e in row[4]]
        stored = Rating.objects.filter(item__study=study).count()
        most = max(
            Counter(
                Rating.objects.filter(item__study=study).values_list("item_id", flat=True)
            ).values(),
            default=0,
        )

        def line(name, values):
            if not values:
                return f"{name}: none"
            return (
                f"{name}: n={len(values)}, median {statistics.median(values):.1f} ms, "
                f"p95 {_percentile(values, 0.95):.1f} ms, p99 {_percentile(values, 0.99):.1f} ms, "
                f"max {max(values):.1f} ms"
            )

        self.stdout.write(line("next item (all calls)", next_ms + claim_ms))
        self.stdout.write(line("  resuming within a batch", next_ms))
        self.stdout.write(line("  claiming a new batch", claim_ms))
        self.stdout.write(line("submit", submit_ms))
        expected = items * min(overlap, len(pool))  # a rater rates an item at most once
        self.stdout.write(
            f"{stored} ratings of {expected} expected in {wall:.1f} s "
            f"({stored / wall:.0f} ratings/s); most ratings on one item: {most} (overlap {overlap})"
        )
        if errors:
            self.stdout.write(f"{len(errors)} errors, first: {errors[0]}")
        if most > overlap or stored != expected or errors:
            raise CommandError("the overlap rule was broken or ratings went missing")

    def _remove(self, study: Study, tag: str) -> None:
        benchmark = study.benchmark
        Rating.objects.filter(item__study=study).delete()  # ratings protect their guideline
        study.delete()
        for submission in Submission.objects.filter(benchmark=benchmark):
            system = submission.system
            submission.delete()
            system.delete()
        benchmark.delete()
