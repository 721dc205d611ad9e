"""Benchmark the public leaderboard at scale.

Seeds (once) a benchmark with --systems systems, --submissions scored and published submissions
and --judges judges, then reports for the leaderboard HTML and JSON: SQL queries per request at
two board sizes (they must not grow with the rows), median and p95 server time, and a load run of
--clients concurrent clients on loopback (errors and throughput).

The first screen (the page as linked: its first rows, the whole table one click away) is timed
cold (caches emptied before every request) and warm (the whole page stored for visitors under
the board state); sizes are given as sent, plain and gzip-compressed, plotly.js included.
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
import plotly
from django.core.cache import cache, caches
from django.core.management.base import BaseCommand
from django.core.wsgi import get_wsgi_application
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.settings import api_settings

from evaluation.benchmarks import get_plugin, registry
from evaluation.models import Benchmark, Judge, Score, Submission, System
from leaderboard.selectors import board_columns

SLUG = "bench-board"


def _node(metric, rng: random.Random):
    """A random value in the shape the metric's type declares."""
    if metric.type == "rate":
        total = rng.randint(50, 600)
        count = rng.randint(0, total)
        return {"count": count, "total": total, "pct": round(100.0 * count / total, 2)}
    if metric.type == "mean":
        value = rng.random()
        low, high = max(0.0, value - 0.05), min(1.0, value + 0.05)
        return {"value": value, "pct": round(100 * value, 2), "ci": [100 * low, 100 * high]}
    if metric.type == "count":
        return rng.randint(0, 1000)
    return round(rng.uniform(0.3, 9), 1)


def _put(results: dict, key: str, value) -> None:
    *parents, last = key.split(".")
    for part in parents:
        results = results.setdefault(part, {})
    results[last] = value


def _results(plugin, rng: random.Random) -> dict:
    """Results in the plug-in's structure: every declared metric, in every split."""
    results: dict = {}
    for split in plugin.splits or (None,):
        for metric in plugin.metrics:
            key = f"{split.key}.{metric.key}" if split else metric.key
            _put(results, key, _node(metric, rng))
    return results


@transaction.atomic
def seed(
    *, systems: int, submissions: int, judges: int, prefix: str = "", plugin_slug: str = ""
) -> Benchmark:
    rng = random.Random(7)
    plugin = registry()[plugin_slug] if plugin_slug else next(iter(registry().values()))
    groups = [group.key for group in plugin.row_groups] or [""]
    benchmark = Benchmark.objects.create(
        slug=f"{SLUG}{prefix}", name=f"Board benchmark {prefix}", plugin=plugin.slug
    )
    judge_rows = Judge.objects.bulk_create(
        [
            Judge(
                benchmark=benchmark,
                slug="official" if i == 0 else f"judge-{i}",
                name=f"Judge {i}",
                provider="openai",
                models_by_kind={kind.key: f"model-{i}" for kind in plugin.judge_kinds},
                is_official=i == 0,
            )
            for i in range(judges)
        ]
    )
    system_rows = System.objects.bulk_create(
        [
            System(
                name=f"{benchmark.slug} system {i:04d}",
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
                row_group=groups[i % len(groups)],
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
            Score(submission=s, judge=j, results=_results(plugin, rng))
            for s in submission_rows
            for j in judge_rows
        ],
        batch_size=1000,
    )
    return benchmark


def clear_seeded() -> None:
    """Every row an earlier seed made."""
    old = Benchmark.objects.filter(slug__startswith=SLUG)
    Score.objects.filter(submission__benchmark__in=old).delete()
    Submission.objects.filter(benchmark__in=old).delete()
    Judge.objects.filter(benchmark__in=old).delete()
    old.delete()
    System.objects.filter(name__startswith=SLUG).delete()


def _p95(sorted_values: list[float]) -> float:
    return sorted_values[int(0.95 * (len(sorted_values) - 1))]


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
        clear_seeded()
        started = time.perf_counter()
        small = seed(systems=10, submissions=40, judges=judges, prefix="-small")
        large = seed(systems=systems, submissions=submissions, judges=judges, prefix="")
        self.stdout.write(
            f"seeded {systems} systems, {submissions} submissions, {judges} judges "
            f"({Score.objects.filter(judge__benchmark=large).count()} scores) in {time.perf_counter() - started:.1f} s"
        )
        plugin = get_plugin(large.plugin)
        last = board_columns(benchmark=large)[-1].key
        group = plugin.row_groups[-1].key if plugin.row_groups else ""
        pages = {
            "HTML": "/benchmarks/{slug}/",
            "JSON": "/api/benchmarks/{slug}/leaderboard/",
            "JSON, judge 2, sorted, filtered": "/api/benchmarks/{slug}/leaderboard/"
            f"?judge=judge-1&sort=-{last}" + (f"&type={group}" if group else ""),
        }
        client = Client()
        self._first_screen(client, large, systems, requests)
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

    def _timed(
        self, client, url: str, requests: int, *, cold: bool, **headers
    ) -> tuple[list[float], list[float]]:
        """Sorted wall-clock and CPU times of the requests. On a shared machine the CPU time
        (this process's, SQLite included) says what a request costs when others compete."""
        times, cpu = [], []
        for _ in range(requests):
            if cold:
                cache.clear()
                caches["responses"].clear()  # whole pages too (leaderboard/response_cache.py)
            begin, begin_cpu = time.perf_counter(), time.process_time()
            response = client.get(url, **headers)
            times.append(time.perf_counter() - begin)
            cpu.append(time.process_time() - begin_cpu)
            assert response.status_code == 200, (url, response.status_code)
        return sorted(times), sorted(cpu)

    def _first_screen(self, client, benchmark, systems: int, requests: int):
        """The board's first screen against the whole table, cold and warm, with sizes."""
        gzip_ok = {"HTTP_ACCEPT_ENCODING": "gzip"}
        for label, url in (
            ("first screen", f"/benchmarks/{benchmark.slug}/"),
            ("whole table (rows=all)", f"/benchmarks/{benchmark.slug}/?rows=all"),
        ):
            plain = client.get(url)
            packed = client.get(url, **gzip_ok)
            shown = plain.content.count(b" data-system=")
            self.stdout.write(
                f"HTML {label}: {shown} of {systems} rows, {len(plain.content) / 1024:.0f} KB, "
                f"{len(packed.content) / 1024:.0f} KB gzip ({packed.get('Content-Encoding')})"
            )
            for warm in (False, True):
                times, cpu = self._timed(client, url, requests, cold=not warm, **gzip_ok)
                self.stdout.write(
                    f"  {'warm (page stored)' if warm else 'cold (caches emptied)'}: median "
                    f"{1000 * statistics.median(times):.1f} ms, "
                    f"p95 {1000 * _p95(times):.1f} ms (CPU median "
                    f"{1000 * statistics.median(cpu):.1f} ms, p95 {1000 * _p95(cpu):.1f} ms)"
                )
        plotly_url = reverse("plotly-js", args=[plotly.__version__])
        raw = b"".join(client.get(plotly_url).streaming_content)
        packed = client.get(plotly_url, **gzip_ok)
        self.stdout.write(
            f"plotly.js: {len(raw) / 1024**2:.1f} MB, sent {len(packed.content) / 1024**2:.1f} MB "
            f"with {packed.get('Content-Encoding')}"
        )

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
