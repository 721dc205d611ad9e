"""Calls in flight to one judge endpoint stay within the configured bound: across the
threads of one process, the processes of the embedded default (file locks) and the workers
sharing Redis."""

import json
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from evaluation.throttle import EndpointSlots
from tests.conftest import REPO, completion, embedded_env, require_service
from tests.toyplugin import toy


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


def slot_holder(slots: str) -> subprocess.Popen:
    """A process that takes a slot of ``slots`` (an expression) and holds it for a minute;
    returned once it holds it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from pathlib import Path\n"
            "from evaluation.throttle import EndpointSlots\n"
            f"with ({slots}).slot():\n"
            "    print('held', flush=True)\n"
            "    time.sleep(60)\n",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_local_slots_bound_threads(tmp_path):
    counter = InFlight()
    holders = [
        EndpointSlots(
            endpoint="local-test", limit=3, redis_url=None, lease_seconds=5, folder=tmp_path
        )
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
def test_a_killed_holders_slot_frees_itself_one_lease_later():
    """A process that holds the only slot is SIGKILLed mid-call: its lease is no longer
    renewed, so the slot comes back after the lease (0.3 s here), not after a call's timeout."""
    require_service("Redis", "127.0.0.1", 6379)
    endpoint = f"redis-lease-{time.monotonic_ns()}"
    url = "redis://127.0.0.1:6379/15"
    holder = slot_holder(
        f"EndpointSlots(endpoint={endpoint!r}, limit=1, redis_url={url!r}, lease_seconds=0.3)"
    )
    try:
        time.sleep(1.0)  # three leases: a live holder keeps its slot by renewing it
        slots = EndpointSlots(endpoint=endpoint, limit=1, redis_url=url, lease_seconds=0.3)
        key = slots.key
        assert slots.redis.zcard(key) == 1
        assert slots.redis.zrange(key, 0, -1, withscores=True)[0][1] > time.time()
        holder.kill()
        holder.wait()
        killed = time.monotonic()
        with slots.slot():
            waited = time.monotonic() - killed
        assert waited < 2.0
    finally:
        holder.kill()


@pytest.mark.services
def test_a_call_longer_than_the_lease_keeps_its_slot():
    require_service("Redis", "127.0.0.1", 6379)
    endpoint = f"redis-long-{time.monotonic_ns()}"
    first, second = (
        EndpointSlots(
            endpoint=endpoint, limit=1, redis_url="redis://127.0.0.1:6379/15", lease_seconds=0.2
        )
        for _ in range(2)
    )
    released = []

    def long_call():
        with first.slot():
            time.sleep(1.0)  # five leases
            released.append(time.monotonic())

    thread = threading.Thread(target=long_call)
    thread.start()
    time.sleep(0.1)
    with second.slot():
        got = time.monotonic()
    thread.join()
    assert released and got >= released[0]  # never two calls at once


@pytest.mark.services
def test_a_kept_slot_serves_the_threads_next_call_and_is_given_back():
    """keep=True: after a call that succeeded, the thread keeps its slot (the same lease in
    Redis) for its next call; the bound still holds for every other holder until the slot is
    given back; a call that fails gives its slot back at once."""
    require_service("Redis", "127.0.0.1", 6379)
    url = "redis://127.0.0.1:6379/15"
    endpoint = f"redis-keep-{time.monotonic_ns()}"
    keeper = EndpointSlots(endpoint=endpoint, limit=1, redis_url=url, lease_seconds=5, keep=True)
    other = EndpointSlots(endpoint=endpoint, limit=1, redis_url=url, lease_seconds=0.5)

    def leases():
        return [token for token, _ in keeper.redis.zrange(keeper.key, 0, -1, withscores=True)]

    with keeper.slot():
        first = leases()
    assert len(first) == 1 and leases() == first  # kept after the call
    with keeper.slot():
        assert leases() == first  # the next call in this thread runs on the same lease

    got = []

    def wait_for_a_slot():
        with other.slot():
            got.append(time.monotonic())

    waiter = threading.Thread(target=wait_for_a_slot)
    waiter.start()
    waiter.join(0.5)
    assert not got  # the kept slot still counts against the bound
    keeper.release_kept()
    waiter.join(5)
    assert got  # given back: the other holder gets it

    with pytest.raises(RuntimeError), keeper.slot():
        raise RuntimeError("the call failed")
    assert leases() == []  # a failed call keeps nothing


# --- The embedded default: several worker processes on one machine ---------------------------

SLOT_CALLER = """
import sys, threading
from pathlib import Path
import httpx
from evaluation.throttle import EndpointSlots
folder, url, threads, calls = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
slots = EndpointSlots(endpoint=url, limit=4, redis_url=None, lease_seconds=20, folder=folder)
def work():
    with httpx.Client() as client:
        for _ in range(calls):
            with slots.slot():
                client.post(url, json={"messages": [{"content": "x"}]}).raise_for_status()
workers = [threading.Thread(target=work) for _ in range(threads)]
for worker in workers: worker.start()
for worker in workers: worker.join()
"""


def counting_responder(counter: InFlight, seconds: float):
    def respond(body, call):
        with counter:
            time.sleep(seconds)
        return 200, {}, {"ok": True}

    return respond


def test_embedded_slots_bound_two_processes_together(tmp_path, judge_server):
    """Two processes of eight calling threads each against a bound of 4: the judge never sees
    more than 4 calls at once, and sees 4 (each process alone would allow 4)."""
    counter = InFlight()
    judge_server.responder = counting_responder(counter, 0.05)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SLOT_CALLER, str(tmp_path), judge_server.url, "8", "6"],
            cwd=REPO,
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.wait(120) == 0
    assert len(judge_server.requests) == 2 * 8 * 6
    assert counter.peak == 4


def test_a_killed_processs_file_slot_is_free_at_once(tmp_path):
    """The kernel drops a dead process's locks: its slot is free as soon as it is gone."""
    holder = slot_holder(
        "EndpointSlots(endpoint='killed', limit=1, redis_url=None, lease_seconds=20, "
        f"folder=Path({str(tmp_path)!r}))"
    )
    try:
        slots = EndpointSlots(
            endpoint="killed", limit=1, redis_url=None, lease_seconds=20, folder=tmp_path
        )
        got = []

        def take_the_slot():
            with slots.slot():
                got.append(time.monotonic())

        waiter = threading.Thread(target=take_the_slot)
        waiter.start()
        waiter.join(0.5)
        assert not got  # held by the live process
        holder.kill()
        holder.wait()
        waiter.join(2)
        assert got
    finally:
        holder.kill()


TOY_TASKS = 50


@pytest.mark.services
def test_a_prefork_worker_on_the_embedded_default_keeps_the_bound(tmp_path, judge_server):
    """A worker started as compose starts it (prefork, --concurrency 2) on the embedded default,
    two toy submissions judged at once, FLOORBOARD_JUDGE_CONCURRENCY=4: the judge never sees
    more than 4 calls at once (each child used to keep a bound of its own: 8)."""
    counter = InFlight()

    def respond(body, call):
        with counter:
            time.sleep(0.2)
        return 200, {}, completion(json.dumps({"score": 1.0, "why": "fine"}))

    judge_server.responder = respond
    env = embedded_env(
        tmp_path / "var",
        DJANGO_DEBUG="1",
        FLOORBOARD_BENCHMARKS="evaluation.benchmarks.mpbench,tests.toyplugin",
        FLOORBOARD_JUDGE_CONCURRENCY="4",
        OPENAI_BASE_URL=judge_server.url,
        # The toy's official judge is imported without a price: with no spending limit it
        # judges (the bound on calls is under test here, not spending).
        FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH="0",
        FLOORBOARD_MAX_JUDGE_SPEND_PER_MONTH_SITE="0",
    )

    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=env, check=True, capture_output=True
        )

    manage("migrate", "--noinput", "-v0")
    toy.write_release(tmp_path / "release", count=TOY_TASKS)
    manage("import_benchmark", "toy-bench", str(tmp_path / "release"))
    # Both queued before the worker starts: its two processes take one each.
    for number in range(2):
        answers = tmp_path / f"answers-{number}.jsonl"
        toy.write_answers(answers, correct=number * TOY_TASKS, seed=number, count=TOY_TASKS)
        manage("submit", str(answers), "--benchmark", "toy-bench", "--system", f"S{number}")
    log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency", "2"],
        cwd=REPO,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        database = tmp_path / "var" / "floorboard.sqlite3"
        deadline = time.monotonic() + 300
        while True:
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as db:
                states = [
                    row[0]
                    for row in db.execute(
                        "SELECT status FROM evaluation_submission WHERE is_reported = 0"
                    )
                ]
            if states == ["scored", "scored"]:
                break
            assert "failed" not in states and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(60)
    # 2 x 2 x TOY_TASKS judgments, all wrong in one upload and all right in the other.
    assert len(judge_server.requests) > 2 * TOY_TASKS
    assert counter.peak == 4
