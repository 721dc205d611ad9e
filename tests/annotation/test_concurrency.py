"""Twenty raters racing on real PostgreSQL, each thread on its own connection: no item ever holds
more than `overlap` live assignments, every stored rating is kept, a double submit is one
rating, and batches abandoned mid-way are taken over once their locks expire."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connections
from django.db.models import Count, Q
from django.utils import timezone

from annotation import assignment as rating
from annotation.models import Assignment, Rating
from tests.annotation.factories import invite, make_board, make_study

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

OVERLAP = 3


def live_per_item() -> dict[int, int]:
    now = timezone.now()
    live = Q(assignments__status="submitted") | Q(
        assignments__status="open", assignments__locked_until__gt=now
    )
    from annotation.models import Item

    return dict(Item.objects.annotate(n=Count("assignments", filter=live)).values_list("pk", "n"))


class Race:
    """Runs raters in threads and records what each one was told was stored."""

    def __init__(self):
        self.stored: list[tuple[int, int]] = []  # (item, rater) of submits answered "created"
        self.repeats = 0
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()

    def rater(self, rater, start: threading.Barrier, *, stop_after: int | None, seed: int):
        rng = random.Random(seed)
        try:
            start.wait()
            done = 0
            while stop_after is None or done < stop_after:
                current = rating.rater_current(rater=rater, start=True)
                if current is None:
                    break
                label = rng.choice(["consistent", "inconsistent", "missing"])
                stored, created = rating.assignment_submit(
                    rater=rater, code=current.code, label=label
                )
                with self.lock:
                    if created:
                        self.stored.append((stored.item_id, rater.pk))
                if rng.random() < 0.2:  # a double click: the same answer sent again
                    _, again = rating.assignment_submit(rater=rater, code=current.code, label=label)
                    with self.lock:
                        self.repeats += 1
                        assert again is False
                done += 1
        except BaseException as error:  # reported by the test, not lost in the thread
            with self.lock:
                self.errors.append(error)
        finally:
            connections.close_all()

    def run(self, raters, *, stop_after=None):
        barrier = threading.Barrier(len(raters))
        threads = [
            threading.Thread(
                target=self.rater,
                args=(r, barrier),
                kwargs={"stop_after": (stop_after or {}).get(r.pk), "seed": r.pk},
            )
            for r in raters
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(t.is_alive() for t in threads), "a rater thread hung"


def watch(stop: threading.Event, peaks: list[int]):
    try:
        while not stop.is_set():
            counts = live_per_item()
            peaks.append(max(counts.values(), default=0))
            time.sleep(0.005)
    finally:
        connections.close_all()


def test_twenty_raters_racing_never_exceed_the_overlap_and_lose_nothing(postgres):
    board = make_board(submissions=2, tasks=20, audio=False)
    study = make_study(board, per_stratum=20, overlap=OVERLAP, batch_size=5)  # 40 items
    raters = invite(study, 20)
    items = list(study.items.values_list("pk", flat=True))

    stop, peaks = threading.Event(), []
    watcher = threading.Thread(target=watch, args=(stop, peaks))
    watcher.start()
    race = Race()
    # First wave: every rater races; five of them walk away in the middle of a batch.
    quitters = {r.pk: 2 for r in raters[:5]}
    race.run(raters, stop_after=quitters)
    first_wave = len(race.stored)
    held = Assignment.objects.filter(rater_id__in=quitters, status="open").count()
    # Their batches are abandoned: once the locks run out the others take the items over.
    Assignment.objects.filter(rater_id__in=quitters, status="open").update(
        locked_until=timezone.now() - timedelta(seconds=1)
    )
    race.run(raters[5:])
    stop.set()
    watcher.join(30)

    assert not race.errors, race.errors
    assert held > 0, "the quitters held nothing, so no lock was taken over"
    assert first_wave < len(items) * OVERLAP
    assert max(peaks) <= OVERLAP
    assert max(live_per_item().values()) <= OVERLAP
    # Never lost: every submit answered "created" is a row, and no row without one.
    rows = list(Rating.objects.values_list("item_id", "rater_id"))
    assert Counter(rows) == Counter(race.stored)
    assert Counter(item for item, _ in rows) == {pk: OVERLAP for pk in items}
    assert race.repeats > 0
    assert Rating.objects.count() == len(items) * OVERLAP


def test_a_double_submit_racing_itself_is_stored_once(postgres):
    board = make_board(submissions=1, tasks=2, audio=False)
    study = make_study(board, per_stratum=2, overlap=1, batch_size=2)
    rater = invite(study)
    current = rating.rater_current(rater=rater, start=True)
    barrier = threading.Barrier(8)
    results, errors = [], []

    def submit():
        try:
            barrier.wait()
            results.append(
                rating.assignment_submit(rater=rater, code=current.code, label="consistent")[1]
            )
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert sorted(results) == [False] * 7 + [True]
    assert Rating.objects.filter(assignment=current).count() == 1


def test_the_assignment_benchmark_reports_latencies_and_cleans_up(postgres):
    import io

    from django.core.management import call_command

    from annotation.models import Study
    from evaluation.models import Benchmark

    out = io.StringIO()
    call_command("bench_assignment", raters=4, strata=2, per_stratum=6, batch_size=5, stdout=out)
    text = out.getvalue()
    assert "next item (all calls): n=" in text and "p95" in text
    assert "36 ratings of 36 expected" in text and "most ratings on one item: 3" in text
    assert not Study.objects.exists() and not Benchmark.objects.exists()
