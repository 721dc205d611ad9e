"""Load on the public pages, measured on the server as the image runs it.

Seeds the board bench_leaderboard seeds (--systems systems, --submissions scored and published
submissions, --judges judges), then starts gunicorn in a process of its own with the Docker
image's command and worker count (docker/Dockerfile's CMD and config/gunicorn.py: two per core
plus one; --workers overrides it), DEBUG off, and drives it from another process: wrk where it is installed, else
config/devtools/loadgen.py. Each page (the home page, the board's HTML, the JSON leaderboard's first
page, a scored submission's page, and a task page with its audio players: a task of the first
plug-in's first demo run, scored by its offline judge on its demo release) is read by each number of --readers for --seconds, as a browser
asks (gzip accepted, no cookie), and requests/s, p50, p95, p99 and errors are printed.

The whole run is made twice, with the response cache off (FLOORBOARD_RESPONSE_CACHE=0: every
page computed, as before it existed) and on, unless --cache says one. With the cache on, it also
measures how long a change takes to reach a reader: a row withdrawn through board_changed (as
the services do) and one withdrawn behind their back (seen once FLOORBOARD_BOARD_STATE_SECONDS
pass). API rate limits are lifted for the server it starts: the server is measured, not them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from config.devtools.management.commands.bench_leaderboard import SLUG, clear_seeded, seed
from config.gunicorn import workers_from
from evaluation.benchmarks import registry
from evaluation.board_state import board_changed
from evaluation.models import Submission
from evaluation.services import benchmark_import, submission_create
from evaluation.services.work import inline

DOCKERFILE = Path(settings.BASE_DIR) / "docker" / "Dockerfile"
TASK_SLUG = "bench-task-page"
WRK_REPORT = """
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "errors": %d, "p50": %.2f, "p95": %.2f, "p99": %.2f}\\n',
    summary.requests, summary.duration / 1e6, errors, latency:percentile(50) / 1000,
    latency:percentile(95) / 1000, latency:percentile(99) / 1000))
end
"""


def image_command() -> tuple[list[str], int]:
    """The image's CMD, read from docker/Dockerfile, and the workers it runs here: its
    WEB_CONCURRENCY if it sets one, else config/gunicorn.py's count for this machine."""
    text = DOCKERFILE.read_text()
    command = json.loads(re.findall(r"^CMD (\[.*\])$", text, re.MULTILINE)[-1])
    workers = re.findall(r"^ENV WEB_CONCURRENCY=(\d+)$", text, re.MULTILINE)
    return command, int(workers[-1]) if workers else workers_from({})


def task_page_seeded() -> str:
    """The address of a task page with audio: the first plug-in's demo release imported once as
    TASK_SLUG, its first demo run submitted, scored in this process and published."""
    scored = Submission.objects.filter(benchmark__slug=TASK_SLUG, status=Submission.Status.SCORED)
    submission = scored.first()
    if submission is None:
        plugin = next(iter(registry().values()))
        folder = Path(settings.VAR_DIR) / TASK_SLUG
        plugin.write_demo_source(folder / "source")
        benchmark = benchmark_import(
            slug=TASK_SLUG, directory=folder / "source", plugin=plugin.slug, is_demo=True
        ).benchmark
        run = plugin.write_demo_runs(folder / "uploads")[0]
        with inline():
            submission = submission_create(
                benchmark=benchmark,
                bundle_path=run.path,
                system_name=run.system,
                row_group=run.row_group,
                judge=benchmark.judges.get(slug="offline"),
                publish=True,
                options=dict(run.options),
                allow_partial=True,
            )
        submission.refresh_from_db()
        if submission.status != Submission.Status.SCORED:
            raise CommandError(f"the task page's submission ended {submission.status}")
    rows = list(
        submission.task_results.filter(task__held_out=False)
        .select_related("task")
        .order_by("task__task_id")
    )
    heard = [row for row in rows if any(name.endswith(".wav") for name in row.files)]
    return f"/submissions/{submission.pk}/tasks/{(heard or rows)[0].task.task_id}/"


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("--systems", type=int, default=500)
        parser.add_argument("--submissions", type=int, default=2000)
        parser.add_argument("--judges", type=int, default=4)
        parser.add_argument("--readers", type=int, nargs="+", default=[20, 100])
        parser.add_argument("--seconds", type=float, default=10.0, help="per page and readers")
        parser.add_argument("--workers", type=int, help="default: the image's WEB_CONCURRENCY")
        parser.add_argument("--port", type=int, default=8880)
        parser.add_argument("--cache", choices=["both", "off", "on"], default="both")
        parser.add_argument("--reuse", action="store_true", help="keep an earlier run's rows")

    def handle(self, *args, systems, submissions, judges, readers, seconds, workers, port, cache,
               reuse, **options):  # fmt: skip
        if settings.DEBUG:
            raise CommandError("run it with DEBUG off: the site is measured as it is deployed")
        call_command("migrate", "--noinput", verbosity=0)
        board = Submission.objects.filter(benchmark__slug=SLUG).first()
        if board is None or not reuse:
            clear_seeded()
            started = time.perf_counter()
            seed(systems=systems, submissions=submissions, judges=judges)
            self.stdout.write(
                f"seeded {systems} systems, {submissions} submissions, {judges} judges in "
                f"{time.perf_counter() - started:.0f} s"
            )
        Submission.objects.filter(benchmark__slug=SLUG).update(is_published=True)
        submission = Submission.objects.filter(benchmark__slug=SLUG).order_by("pk").first()
        pages = {
            "home": "/",
            "board HTML": f"/benchmarks/{SLUG}/",
            "board JSON": f"/api/benchmarks/{SLUG}/leaderboard/",
            "submission": f"/submissions/{submission.pk}/",
            "task": task_page_seeded(),
        }
        command, image_workers = image_command()
        workers = workers or image_workers
        wrk = shutil.which("wrk")
        self.stdout.write(
            f"gunicorn as the image runs it ({' '.join(command[1:])}), {workers} workers, "
            f"driven by {'wrk' if wrk else 'config/devtools/loadgen.py'} from another process; "
            f"{os.cpu_count()} cores, {seconds:.0f} s per figure, cache "
            f"{'Redis' if settings.CACHE_URL else 'files under ' + str(settings.VAR_DIR)}"
        )
        modes = ["off", "on"] if cache == "both" else [cache]
        self.stdout.write(
            f"{'cache':<6} {'page':<12} {'readers':>7} {'req/s':>8} {'p50 ms':>8} "
            f"{'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
        )
        for mode in modes:
            server = self._start(command, workers, port, mode)
            try:
                base = f"http://127.0.0.1:{port}"
                for label, path in pages.items():
                    self._warm(base + path, label)
                    for count in readers:
                        found = self._drive(wrk, base + path, count, seconds)
                        self.stdout.write(
                            f"{mode:<6} {label:<12} {count:>7} "
                            f"{found['requests'] / found['seconds']:>8.0f} {found['p50']:>8.1f} "
                            f"{found['p95']:>8.1f} {found['p99']:>8.1f} {found['errors']:>7}"
                        )
                if mode == "on":
                    self._freshness(base + pages["board JSON"])
            finally:
                server.terminate()
                server.wait(30)

    def _start(self, command: list[str], workers: int, port: int, mode: str):
        argv = [sys.executable, "-m", *command]
        argv[argv.index("--bind") + 1] = f"127.0.0.1:{port}"
        env = {
            **os.environ,
            "DJANGO_DEBUG": "",
            "FLOORBOARD_SSL_REDIRECT": "0",
            "FLOORBOARD_SECURE_COOKIES": "0",
            "FLOORBOARD_RESPONSE_CACHE": "1" if mode == "on" else "0",
            "FLOORBOARD_THROTTLE_ANON": "1000000/second",
            "FLOORBOARD_THROTTLE_USER": "1000000/second",
            "WEB_CONCURRENCY": str(workers),
        }
        log = open(Path(tempfile.gettempdir()) / f"bench-load-{port}.log", "ab")  # noqa: SIM115
        server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError(f"gunicorn exited ({server.returncode}); see {log.name}")
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                return server
            except httpx.HTTPError:
                time.sleep(0.3)
        server.terminate()
        raise CommandError(f"gunicorn did not answer within 60 s; see {log.name}")

    def _warm(self, url: str, label: str) -> None:
        """Every worker reads the page once (a cold start is not what is measured)."""
        for _ in range(8):
            response = httpx.get(url, headers={"Accept-Encoding": "gzip"}, timeout=120)
            if response.status_code != 200:
                raise CommandError(f"{label}: {url} answered {response.status_code}")

    def _drive(self, wrk: str | None, url: str, readers: int, seconds: float) -> dict:
        if wrk:
            with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
                script.write(WRK_REPORT)
            try:
                out = subprocess.run(
                    [wrk, "-t", "2", "-c", str(readers), "-d", f"{seconds:.0f}s",
                     "--timeout", "30s", "-H", "Accept-Encoding: gzip", "-s", script.name, url],
                    capture_output=True, text=True, check=True,
                ).stdout  # fmt: skip
            finally:
                os.unlink(script.name)
        else:
            out = subprocess.run(
                [sys.executable, "-m", "config.devtools.loadgen", url, str(readers), str(seconds)],
                capture_output=True, text=True, check=True, cwd=settings.BASE_DIR,
            ).stdout  # fmt: skip
        return json.loads(out.strip().splitlines()[-1])

    def _freshness(self, url: str) -> None:
        """Seconds until a withdrawn row leaves the served JSON: announced, and not."""

        def shown() -> list[int]:
            return [e["submission"] for e in httpx.get(url, timeout=60).json()["entries"]]

        for announced in (True, False):
            row = Submission.objects.get(pk=shown()[0])
            Submission.objects.filter(pk=row.pk).update(is_published=False)
            if announced:
                board_changed(benchmark_id=row.benchmark_id)
            begin = time.perf_counter()
            while row.pk in shown():
                if time.perf_counter() - begin > 60:
                    raise CommandError("a withdrawn row was still served after 60 s")
                time.sleep(0.05)
            self.stdout.write(
                f"a withdrawn row left the served board after {time.perf_counter() - begin:.2f} s "
                f"({'through board_changed' if announced else 'unannounced'})"
            )
            Submission.objects.filter(pk=row.pk).update(is_published=True)
            board_changed(benchmark_id=row.benchmark_id)
