"""Hosting overhead: the whole site against a plain-Python pass, in one run.

A synthetic 927-task run (every task of the real benchmark) is scored twice against a local
OpenAI-compatible judge that answers after --latency seconds. The workload is the first registered
plug-in's demo/overhead.py (its synthetic run, its requests and its table computed in plain
Python):

- plain: detection over the folders, a judge call for every request (from a pool of
  --concurrency threads; the site calls byte-identical requests once), aggregation; no
  database, no queue, no storage;
- the site: the upload validated and stored, then real Celery worker processes (--workers) on the
  configured database and broker do ingest, detection, judging and aggregation; timed from the
  upload until the submission is scored, by the time the worker records as it scores it
  (finished_at), so that watching for it, a read every 0.1 s, takes next to nothing from the
  workers on the same machine.

With --submissions N, N uploads are queued at once and timed until the last is scored, against
the ideal: calls x latency / bound, the calls being the distinct requests of all the uploads.
Each upload has responses of its own where the agent spoke; a turn-taking task where it did not
asks the judge the same in every upload, and is called once.

With one upload, each pair of passes also prints the processor time the two spent, where
the machine's load moves it less than the seconds: the plain pass's process against the site's
Python processes (the uploading one while it validates and stores the upload, and the workers
from the upload until scored; the database and the broker are not counted). The workers' time
is split between their main thread, which runs the stages (ingest, linking, claiming and storing
judgments, aggregation), and their other threads, mostly the judge calls. Then when the site's
stages ended, in seconds from the upload: the upload validated and accepted, the first judgment
made, the last answer stored, the submission scored.

Each pass is checked, or the command fails: every upload's stored results equal the plain
pass's, leaf for leaf, and the site asked the judge as many times as there are distinct
requests (byte-identical requests share one judgment). The judge's verdict is read from the
request's bytes, so a verdict stored on the wrong task or kind changes the results.

With --repeat N the passes run N times, in turn, each on responses of its own (a pass finds
nothing in the judgment cache), and the median ratios are printed too: on a shared machine
single pairs vary widely.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.models import Max, Min, Q

from config.devtools import plugin_module
from config.devtools.bench_support import (
    JudgeServer,
    differences,
    local_judges_allowed,
    process_cpu_seconds,
)
from evaluation import services
from evaluation.bundles import zip_directory
from evaluation.models import (
    Benchmark,
    JudgeCharge,
    Judgment,
    Score,
    Submission,
    System,
    Task,
    TaskJudgment,
    TaskResult,
)

# The benchmark whose run is measured, found by name among the registered plug-ins.
workload = plugin_module("overhead")

# The tables a submission's scoring reads and writes.
PIPELINE_MODELS = (Task, Submission, TaskResult, TaskJudgment, Judgment, JudgeCharge)


def _distinct(requests: list) -> set[tuple[str, str]]:
    """The requests that are not byte-identical to another (those share one judgment)."""
    return {(kind, prompt) for _, kind, prompt, _ in requests}


def _median(label: str, ratios: list[float]) -> str:
    listed = ", ".join(f"{ratio:.2f}" for ratio in ratios)
    return f"{label} {statistics.median(ratios):.2f} of {len(ratios)} ({listed})"


@dataclass
class _SiteUsage:
    upload_cpu: float  # processor seconds of the uploading process while it uploads
    # Of the workers from the upload until scored: all their threads, and their main threads
    # (the rest: mostly the calls); None where not known.
    worker_cpu: tuple[float, float] | None
    stages: list[tuple[str, float]]  # (stage, when it ended in seconds from the upload)


def _workers_cpu(processes) -> tuple[float, float] | None:
    """The processor seconds these processes have spent so far, all their threads and their
    main threads alone; None where /proc cannot tell."""
    whole = [process_cpu_seconds(process.pid) for process in processes]
    main = [process_cpu_seconds(process.pid, main_thread=True) for process in processes]
    return None if None in whole + main else (sum(whole), sum(main))


def _stages(submission_id: int, started: float) -> list[tuple[str, float]]:
    """When a scored upload's stages ended, in seconds from ``started`` (a time.time())."""
    submission = Submission.objects.get(pk=submission_id)
    judgments = Judgment.objects.filter(uses__task_result__submission=submission).aggregate(
        first=Min("created_at"), last=Max("completed_at")
    )
    ends = [
        ("accepted", submission.created_at),
        ("first judgment", judgments["first"]),
        ("last answer", judgments["last"]),
        ("scored", submission.finished_at),
    ]
    return [(stage, at.timestamp() - started) for stage, at in ends if at is not None]


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        checkout = workload.CHECKOUT if workload else ""
        default = settings.BASE_DIR.parent / "shared" / "benchmarks" / checkout
        parser.add_argument("--benchmark-dir", type=Path, default=default)
        parser.add_argument("--latency", type=float, default=0.2, help="judge latency, s")
        parser.add_argument("--concurrency", type=int, default=16)
        parser.add_argument("--workers", type=int, default=1, help="worker processes")
        parser.add_argument("--submissions", type=int, default=1)
        parser.add_argument("--repeat", type=int, default=1, help="pairs of passes, in turn")

    def handle(
        self, *args, benchmark_dir, latency, concurrency, workers, submissions, repeat, **options
    ):
        if workload is None:
            raise CommandError("no registered plug-in has a demo/overhead.py workload")
        if not (benchmark_dir / "tasks.jsonl").is_file():
            raise CommandError(
                f"{benchmark_dir}: no {workload.PLUGIN} checkout; pass --benchmark-dir"
            )
        if min(concurrency, workers, submissions, repeat) < 1:
            raise CommandError("--concurrency, --workers, --submissions and --repeat must be >= 1")
        if submissions > 1 and latency <= 0:
            raise CommandError(
                "several submissions are measured against calls x latency / bound: "
                "give a --latency above 0"
            )
        # In a process of its own, as a remote judge would be: its work takes nothing from
        # either pass.
        server = JudgeServer(latency, workload.answer)
        work = Path(tempfile.mkdtemp(prefix="floorboard-overhead-"))
        benchmark = services.benchmark_import(
            slug="bench-overhead", directory=benchmark_dir, plugin=workload.PLUGIN, name="Overhead"
        ).benchmark
        judge = benchmark.judges.get(slug="official")
        judge.base_url, judge.concurrency = server.url, concurrency
        # A local judge costs nothing; with a price, spending limits let it judge.
        judge.price_input_per_mtok = judge.price_output_per_mtok = 0
        judge.save()
        try:
            tasks = {t.task_id: t.spec for t in benchmark.tasks.all()}
            prompts = {p.kind: p for p in benchmark.prompts.all()}
            database = connection.vendor
            broker = settings.CELERY_BROKER_URL.split(":", 1)[0]
            self.stdout.write(
                f"{database} + {broker} broker, judge {latency * 1000:.0f} ms, "
                f"{workers} worker(s), bound {concurrency}"
            )
            ratios, cpu_ratios = [], []
            for run in range(1, repeat + 1):
                trees = []
                for n in range(submissions):
                    tree = work / f"pass-{run}" / f"run-{n}"
                    workload.write_run(tree, list(tasks), f"run-{uuid.uuid4().hex[:8]}")
                    trees.append(tree)
                plain, plain_cpu, requests, results = self._plain(
                    trees[0], tasks, prompts, server.url, concurrency
                )
                calls, distinct, expected = len(requests), _distinct(requests), [results]
                for tree in trees[1:]:
                    # The other uploads' results, with the verdicts the judge gives (it is not
                    # asked: this is not timed).
                    found_here, asked_here = workload.requests(tree, tasks, prompts)
                    verdicts = {task_id: {} for task_id in tasks}
                    for task_id, kind, prompt, _ in asked_here:
                        verdicts[task_id][kind] = workload.verdict(kind, workload.answer(prompt))
                    expected.append(workload.results(tasks, found_here, verdicts))
                    # Uploads share a request where no response tells them apart (an agent
                    # that did not speak): one call between them.
                    distinct |= _distinct(asked_here)
                asked = server.calls
                ours, found, usage = self._site(benchmark, judge, trees, workers)
                self._check(expected, found, len(distinct), server.calls - asked)
                label = f"pass {run}: " if repeat > 1 else ""
                if submissions == 1:
                    ratios.append(ours / plain)
                    self.stdout.write(f"{label}plain Python: {plain:.2f} s for {calls} calls")
                    self.stdout.write(
                        f"{label}the site:     {ours:.2f} s   ratio {ours / plain:.2f}"
                    )
                    if usage.worker_cpu is not None:
                        worker_cpu, main_cpu = usage.worker_cpu
                        site_cpu = usage.upload_cpu + worker_cpu
                        cpu_ratios.append(site_cpu / plain_cpu)
                        self.stdout.write(
                            f"{label}processor: plain {plain_cpu:.2f} s, the site "
                            f"{site_cpu:.2f} s (upload {usage.upload_cpu:.2f}, workers "
                            f"{worker_cpu:.2f}: main thread{'s' if workers > 1 else ''} "
                            f"{main_cpu:.2f}, other threads {worker_cpu - main_cpu:.2f})   "
                            f"ratio {cpu_ratios[-1]:.2f}"
                        )
                    self.stdout.write(
                        f"{label}the site's stages: "
                        + ", ".join(f"{stage} {at:.2f} s" for stage, at in usage.stages)
                    )
                else:
                    ideal = len(distinct) * latency / concurrency
                    ratios.append(ours / ideal)
                    self.stdout.write(
                        f"{label}{submissions} submissions at once: {ours:.2f} s for "
                        f"{len(distinct)} calls; ideal {ideal:.2f} s   ratio {ratios[-1]:.2f}"
                    )
                self._clear(benchmark)
                shutil.rmtree(work / f"pass-{run}", ignore_errors=True)
            asked_for = (
                f"the plain pass's {calls}"
                if submissions == 1
                else f"the {submissions} uploads' {submissions * calls}"
            )
            self.stdout.write(
                f"results identical to the plain pass's; {len(distinct)} judge calls, one per "
                f"distinct request of {asked_for}"
                + (f", in each of {repeat} passes" if repeat > 1 else "")
            )
            if repeat > 1:
                self.stdout.write(_median("median ratio", ratios))
                if cpu_ratios:
                    self.stdout.write(_median("median processor ratio", cpu_ratios))
            if submissions > 1 and workers > 1 and not broker.startswith("redis"):
                # evaluation/throttle.py: without Redis the bound is a semaphore per process.
                self.stdout.write(
                    f"  (no Redis: each of the {workers} workers allows {concurrency} calls "
                    "at once, so the ideal above is not their bound)"
                )
        finally:
            server.stop()
            self._clear(benchmark)
            Benchmark.objects.filter(pk=benchmark.pk).delete()
            shutil.rmtree(work, ignore_errors=True)

    def _clear(self, benchmark) -> None:
        """What the passes stored: their submissions with their stored files, charges and
        systems, and the judgments."""
        submissions = Submission.objects.filter(benchmark=benchmark)
        systems = set(submissions.values_list("system_id", flat=True))
        for submission in submissions:
            submission.bundle.delete(save=False)
        JudgeCharge.objects.filter(
            Q(submission__benchmark=benchmark) | Q(judge__benchmark=benchmark)
        ).delete()
        submissions.delete()
        System.objects.filter(pk__in=systems, submissions__isnull=True).delete()
        Judgment.objects.filter(prompt_version__benchmark=benchmark).delete()

    def _check(self, expected: list, found: list, calls: int, asked: int) -> None:
        """The site did what the plain pass did: a score for every upload, each with the results
        the plain pass gives for it (``expected``, in the same order), from one judge call per
        distinct request of the uploads (``calls``; byte-identical requests share one
        judgment)."""
        missing = found.count(None)
        if missing:
            raise CommandError(f"{missing} of {len(found)} scored upload(s) have no score stored")
        for n, (wanted, results) in enumerate(zip(expected, found, strict=True)):
            named = differences(wanted, results)
            if named:
                upload = f"upload {n + 1}: " if len(found) > 1 else ""
                raise CommandError(
                    f"{upload}the site's results differ from the plain pass's in {len(named)} "
                    f"place(s): {'; '.join(named[:5])}"
                )
        if asked != calls:
            raise CommandError(
                f"the site asked the judge {asked} times, where the uploads have {calls} "
                "distinct requests"
            )

    def _plain(self, tree: Path, tasks: dict, prompts: dict, url: str, concurrency: int):
        """Detection, the judge calls from a thread pool, aggregation: no database, no queue.
        Returns the seconds, the processor seconds, the requests called, the results."""
        started, cpu = time.perf_counter(), time.process_time()
        found, requests = workload.requests(tree, tasks, prompts)
        client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=concurrency))

        def call(item):
            task_id, kind, prompt, schema = item
            reply = client.post(
                f"{url}/chat/completions",
                json={
                    "model": "m",
                    "messages": [{"role": "user", "content": prompt}],
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": workload.SCHEMA_NAME,
                            "strict": True,
                            "schema": schema,
                        },
                    },
                },
            ).json()
            return (
                task_id,
                kind,
                workload.verdict(kind, reply["choices"][0]["message"]["content"]),
            )

        verdicts: dict[str, dict] = {t: {} for t in tasks}
        with ThreadPoolExecutor(concurrency) as pool:
            for task_id, kind, verdict in pool.map(call, requests):
                verdicts[task_id][kind] = verdict
        client.close()
        results = workload.results(tasks, found, verdicts)
        return time.perf_counter() - started, time.process_time() - cpu, requests, results

    def _site(self, benchmark, judge, trees: list[Path], workers: int):
        """Upload to scored, through real worker processes on this database and broker: the
        seconds, each upload's results as stored (None for one with no score), and the
        processor time and stages (_SiteUsage)."""
        zips = [zip_directory(tree) for tree in trees]
        env = {
            **os.environ,
            "FLOORBOARD_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
            **local_judges_allowed(),
        }
        log = open(Path(tempfile.gettempdir()) / "floorboard-overhead-worker.log", "ab")  # noqa: SIM115
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "--pool=solo",
                    "-Q",
                    env["FLOORBOARD_QUEUE"],
                    "--without-mingle",
                    "--without-gossip",
                    "--loglevel=WARNING",
                ],
                cwd=settings.BASE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for _ in range(workers)
        ]
        try:
            if connection.vendor == "postgresql":
                # Statistics as autovacuum keeps them (a PostgreSQL may run without it): taken
                # before the submission exists, with every judgment settled, as a new
                # submission finds them. A read planned badly from them shows in the figure.
                with connection.cursor() as cursor:
                    tables = ", ".join(model._meta.db_table for model in PIPELINE_MODELS)
                    cursor.execute(f"VACUUM ANALYZE {tables}")
            time.sleep(3.0)  # let the workers connect before the clock starts
            started = time.time()  # the clock timezone.now() reads, which finished_at keeps
            before = _workers_cpu(processes)
            upload_cpu = time.process_time()
            made = [
                services.submission_create(
                    benchmark=benchmark,
                    bundle_path=path,
                    system_name=f"Overhead {n}",
                    judge=judge,
                )
                for n, path in enumerate(zips)
            ]
            upload_cpu = time.process_time() - upload_cpu
            runs = Submission.objects.filter(pk__in=[s.pk for s in made])
            while True:
                states = list(runs.values_list("status", "finished_at", "error"))
                for status, _, error in states:
                    if status == "failed":
                        raise CommandError(f"a run failed: {error}")
                if all(status == "scored" for status, _, _ in states):
                    after = _workers_cpu(processes)
                    seconds = max(finished.timestamp() for _, finished, _ in states) - started
                    stored = dict(
                        Score.objects.filter(submission__in=runs, judge=judge).values_list(
                            "submission_id", "results"
                        )
                    )
                    usage = _SiteUsage(
                        upload_cpu,
                        None
                        if before is None or after is None
                        else (after[0] - before[0], after[1] - before[1]),
                        _stages(made[0].pk, started) if len(made) == 1 else [],
                    )
                    return seconds, [stored.get(submission.pk) for submission in made], usage
                time.sleep(0.1)
        finally:
            for process in processes:
                process.terminate()
                process.wait(30)
            log.close()
            for path in zips:
                path.unlink(missing_ok=True)
