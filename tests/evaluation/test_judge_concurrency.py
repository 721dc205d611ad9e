"""Calls in flight to one judge endpoint stay within the configured bound."""

import threading
import time

import pytest

from evaluation.throttle import EndpointSlots
from tests.conftest import require_service


class InFlight:
    def __init__(self):
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


def hammer(slot_holders, calls_each: int, counter: InFlight):
    def work(slots):
        for _ in range(calls_each):
            with slots.slot(), counter:
                time.sleep(0.01)

    threads = [threading.Thread(target=work, args=(s,)) for s in slot_holders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_local_slots_bound_threads():
    counter = InFlight()
    holders = [
        EndpointSlots(endpoint="local-test", limit=3, redis_url=None, lease_seconds=5)
        for _ in range(10)
    ]
    hammer(holders, 5, counter)
    assert counter.peak == 3


@pytest.mark.services
def test_redis_slots_bound_across_workers():
    require_service("Redis", "127.0.0.1", 6379)
    endpoint = f"redis-test-{time.monotonic_ns()}"
    counter = InFlight()
    # Each holder has its own Redis connection, as separate worker processes would.
    holders = [
        EndpointSlots(
            endpoint=endpoint, limit=4, redis_url="redis://127.0.0.1:6379/15", lease_seconds=5
        )
        for _ in range(12)
    ]
    hammer(holders, 4, counter)
    assert counter.peak == 4


@pytest.mark.services
def test_a_dead_holders_slot_frees_itself():
    require_service("Redis", "127.0.0.1", 6379)
    endpoint = f"redis-lease-{time.monotonic_ns()}"
    slots = EndpointSlots(
        endpoint=endpoint, limit=1, redis_url="redis://127.0.0.1:6379/15", lease_seconds=0.3
    )
    held = slots.slot()
    held.__enter__()  # never released, like a worker killed mid-call
    started = time.monotonic()
    with slots.slot():
        waited = time.monotonic() - started
    assert 0.2 < waited < 2.0
