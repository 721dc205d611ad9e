"""Benchmark the public leaderboard at scale.

Seeds (once) a benchmark with --systems systems, --submissions scored and published submissions
and --judges judges, then reports for the leaderboard HTML and JSON: SQL queries per request at
two board sizes (they must not grow with the rows), median and p95 server time, and a load run of
--clients concurrent clients on loopback (errors and throughput).
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx
from django.core.management.base import BaseCommand
from django.core.wsgi import get_wsgi_application
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.settings import api_settings

from evaluation.models import Benchmark, Judge, Score, Submission, System

SLUG = "bench-board"
TYPES = ["realtime", "non-realtime", "text-llm"]


def _rate(rng: random.Random, total: int) -> dict:
    count = rng.randint(0, total)
    return {"count": count, "total": total, "pct": round(100.0 * count / total, 2)}


def _results(rng: random.Random) -> dict:
    return {
        "understanding": {
            "n": 543,
            "overall_acc": _rate(rng, 543),
            "spk_name_acc": _rate(rng, 198),
            "latency_s": round(rng.uniform(0.3, 9), 1),
        },
        "discussion": {
            "n": 128,
            "tt_acc": _rate(rng, 128),
            "app_acc": _rate(rng, 128),
            "latency_s": round(rng.uniform(0.3, 9), 1),
        },
        "turnbased": {
            "n": 256,
            "tt_acc": _rate(rng, 256),
            "app_acc": _rate(rng, 256),
            "latency_s": round(rng.uniform(0.3, 9), 1),
        },
    }


@transaction.atomic
def seed(*, systems: int, submissions: int, judges: int, prefix: str = "") -> Benchmark:
    rng = random.Random(7)
    benchmark = Benchmark.objects.create(
        slug=f"{SLUG}{prefix}", name=f"Board benchmark {prefix}", plugin="mp-bench"
    )
    judge_rows = Judge.objects.bulk_create(
        [
            Judge(
                benchmark=benchmark,
                slug="official" if i == 0 else f"judge-{i}",
                name=f"Judge {i}",
                provider="openai",
                models_by_kind={"understanding": f"model-{i}"},
                is_official=i == 0,
            )
            for i in range(judges)
        ]
    )
    system_rows = System.objects.bulk_create(
        [
            System(
                name=f"{benchmark.slug} system {i:04d}",
                system_type=TYPES[i % 3],
                architecture=["end-to-end", "cascaded"][i % 2],
                open_weights=i % 4 == 0,
                full_duplex=i % 5 == 0,
                organization=f"Lab {i % 37}",
            )
            for i in range(systems)
        ]
    )
    submission_rows = Submission.objects.bulk_create(
        [
            Submission(
                benchmark=benchmark,
                system=system_rows[i % systems],
                judge=judge_rows[0],
                status=Submission.Status.SCORED,
                is_published=True,
                is_partial=i % 50 == 0,
                is_flagged=i % 97 == 0,
                flag_reason="Bundle under review" if i % 97 == 0 else "",
            )
            for i in range(submissions)
        ],
        batch_size=500,
    )
    Score.objects.bulk_create(
        [
            Score(submission=s, judge=j, results=_results(rng))
            for s in submission_rows
            for j in judge_rows
        ],
        batch_size=1000,
    )
    return benchmark


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("--systems", type=int, default=500)
        parser.add_argument("--submissions", type=int, default=2000)
        parser.add_argument("--judges", type=int, default=4)
        parser.add_argument("--requests", type=int, default=40, help="timed requests per page")
        parser.add_argument("--clients", type=int, default=50)
        parser.add_argument("--load-seconds", type=float, default=20.0)

    def handle(
        self, *args, systems, submissions, judges, requests, clients, load_seconds, **options
    ):
        # The board is measured, not the anonymous rate limit (600/minute by default).
        api_settings.DEFAULT_THROTTLE_RATES["anon"] = None
        api_settings.DEFAULT_THROTTLE_RATES["user"] = None
        old = Benchmark.objects.filter(slug__startswith=SLUG)
        Score.objects.filter(submission__benchmark__in=old).delete()
        Submission.objects.filter(benchmark__in=old).delete()
        Judge.objects.filter(benchmark__in=old).delete()
        old.delete()
        System.objects.filter(name__startswith=SLUG).delete()
        started = time.perf_counter()
        small = seed(systems=10, submissions=40, judges=judges, prefix="-small")
        large = seed(systems=systems, submissions=submissions, judges=judges, prefix="")
        self.stdout.write(
            f"seeded {systems} systems, {submissions} submissions, {judges} judges "
            f"({Score.objects.filter(judge__benchmark=large).count()} scores) in {time.perf_counter() - started:.1f} s"
        )
        pages = {
            "HTML": "/benchmarks/{slug}/",
            "JSON": "/api/benchmarks/{slug}/leaderboard/",
            "JSON, judge 2, sorted, filtered": "/api/benchmarks/{slug}/leaderboard/?judge=judge-1&sort=-discussion.app_acc&type=realtime",
        }
        client = Client()
        for label, url in pages.items():
            counts = []
            for board in (small, large):
                with CaptureQueriesContext(connection) as queries:
                    response = client.get(url.format(slug=board.slug))
                assert response.status_code == 200, (url, response.status_code)
                counts.append(len(queries))
            times = []
            for _ in range(requests):
                begin = time.perf_counter()
                client.get(url.format(slug=large.slug))
                times.append(time.perf_counter() - begin)
            times.sort()
            self.stdout.write(
                f"{label}: {counts[0]} queries with 10 systems, {counts[1]} with {systems}; "
                f"server time median {1000 * statistics.median(times):.0f} ms, "
                f"p95 {1000 * times[int(0.95 * (len(times) - 1))]:.0f} ms"
            )
        self._load(large, clients, load_seconds)

    def _load(self, benchmark, clients: int, seconds: float):
        server = make_server(
            "127.0.0.1",
            0,
            get_wsgi_application(),
            server_class=_ThreadingServer,
            handler_class=_QuietHandler,
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        urls = [
            f"{base}/benchmarks/{benchmark.slug}/",
            f"{base}/api/benchmarks/{benchmark.slug}/leaderboard/",
        ]
        deadline = time.monotonic() + seconds
        lock = threading.Lock()
        done = {"ok": 0, "errors": 0}

        def worker(index: int):
            with httpx.Client(timeout=60) as http:
                n = index
                while time.monotonic() < deadline:
                    try:
                        ok = http.get(urls[n % 2]).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    n += 1
                    with lock:
                        done["ok" if ok else "errors"] += 1

        begin = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(worker, range(clients)))
        wall = time.perf_counter() - begin
        server.shutdown()
        total = done["ok"] + done["errors"]
        self.stdout.write(
            f"load: {clients} concurrent clients for {wall:.1f} s: {total} requests, {done['errors']} errors, "
            f"{total / wall:.1f} requests/s"
        )
