"""Benchmark the scoring pipeline on a 927-task bundle.

1. ingest + detect + aggregate through the services (storage and database included) against a
   plain-Python pass over the same files doing only detection and aggregation; wall time and
   peak Python memory (tracemalloc) of each, and their ratio.
2. Judge throughput against a local OpenAI-compatible server that waits --judge-delay seconds per
   call, against the ideal calls x delay / concurrency.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path
from unittest import mock

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.devtools.bench_support import JudgeServer, stages_by_hand
from evaluation import services
from evaluation.benchmarks.mpbench import detection, scoring
from evaluation.benchmarks.mpbench.demo import synthetic
from evaluation.benchmarks.mpbench.plugin import plugin
from evaluation.bundles import zip_directory
from evaluation.models import Judgment, Submission
from evaluation.services import pipeline
from evaluation.services.judging import judgments_work

ANSWER = '{"correct": true, "consistent": true, "reasoning": "", "extracted_name": null}'


def _process_without_judging(submission_id: int) -> None:
    """Ingest and every processing step in this process, stopping before judging."""
    with (
        mock.patch.object(pipeline, "after_commit", lambda callback: None),
        mock.patch.object(pipeline, "enqueue_on_commit", lambda *args: None),
    ):
        pipeline.submission_ingest(submission_id=submission_id)
        submission = Submission.objects.get(pk=submission_id)
        for index in range(len(plugin.steps)):
            pipeline.step_run(submission_id=submission_id, index=index)
        pipeline.steps_start(submission_id=submission.pk)


def _measure(function):
    """(result, wall seconds) of one plain run, then peak traced memory of a second run."""
    started = time.perf_counter()
    result = function()
    wall = time.perf_counter() - started
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, wall, peak


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        default = settings.BASE_DIR.parent / "shared" / "benchmarks" / "mpbench"
        parser.add_argument(
            "--benchmark-dir",
            type=Path,
            default=default,
            help="MP-Bench checkout (tasks.jsonl, prompts/)",
        )
        parser.add_argument(
            "--input-words", type=int, default=100, help="words per synthetic input transcript"
        )
        parser.add_argument("--judge-delay", type=float, default=0.2)
        parser.add_argument("--concurrency", type=int, default=16)
        parser.add_argument("--skip-judge", action="store_true")

    def handle(
        self, *args, benchmark_dir, input_words, judge_delay, concurrency, skip_judge, **options
    ):
        if (
            not (benchmark_dir / "tasks.jsonl").is_file()
            and not (benchmark_dir / "benchmark" / "tasks.jsonl").is_file()
        ):
            raise CommandError(f"{benchmark_dir}: no MP-Bench checkout; pass --benchmark-dir")
        benchmark = services.benchmark_import(
            slug="bench-mp-bench",
            directory=benchmark_dir,
            plugin="mp-bench",
            name="MP-Bench (benchmark run)",
        ).benchmark
        tasks = {t.task_id: t for t in benchmark.tasks.all()}
        work = Path(tempfile.mkdtemp(prefix="floorboard-bench-"))
        try:
            tree = work / "tree"
            for index, task_id in enumerate(sorted(tasks)):
                synthetic.write_task_folder(
                    tree / task_id,
                    index=index,
                    outcome=synthetic.outcome_for(index),
                    input_words=input_words,
                )
            size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
            bundle = zip_directory(tree)
            self.stdout.write(f"bundle: {len(tasks)} tasks, {size / 1e6:.1f} MB of transcripts")

            def plain_pass():
                evidence = {
                    t: detection.collect_evidence(*detection.directory_reader(tree / t))
                    for t in tasks
                }
                half = detection.probe_half_duplex(evidence.values()).is_half_duplex
                outcomes = []
                for task_id, task in tasks.items():
                    found = detection.detect(evidence[task_id], half_duplex=half)
                    outcomes.append(
                        scoring.TaskOutcome(
                            scoring.TaskSpec.from_spec(task_id, task.spec),
                            found.spoke,
                            found.latency,
                            {},
                        )
                    )
                return scoring.aggregate(outcomes)

            offline = benchmark.judges.get(slug="offline")

            # The validation pass before queueing is timed on its own: it is not part of the stages.
            started = time.perf_counter()
            report, _ = services.bundle_validate(
                benchmark=benchmark, path=bundle, allow_partial=False
            )
            validate_wall = time.perf_counter() - started
            assert report.ok, report.problems[:3]

            baseline, base_wall, base_peak = _measure(plain_pass)

            def stages_only():
                submission = services.submission_create(
                    benchmark=benchmark,
                    bundle_path=bundle,
                    system_name="Benchmark run",
                    judge=offline,
                )
                started = time.perf_counter()
                _process_without_judging(submission.pk)
                processed = time.perf_counter() - started
                results = services.submission_aggregate(
                    submission=submission, judge=offline
                ).results
                return results, processed, 0.0, time.perf_counter() - started

            # Nothing is queued: every stage is called here (slice results, made after the
            # score in a task of their own, are not part of it).
            with stages_by_hand():
                results, ingest_s, detect_s, ours_wall = stages_only()
                tracemalloc.start()
                stages_only()
                ours_peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            if results != baseline:
                raise CommandError("the pipeline and the plain pass disagree: a bug")
            self.stdout.write(f"validation before queueing: {validate_wall:.2f} s")
            self.stdout.write(
                f"pipeline ingest+detect+aggregate: {ours_wall:.2f} s, "
                f"peak Python memory {ours_peak / 1e6:.1f} MB"
            )
            self.stdout.write(
                f"plain-Python detect+aggregate:    {base_wall:.2f} s, peak Python memory {base_peak / 1e6:.1f} MB"
            )
            self.stdout.write(
                f"ratio (wall): {ours_wall / base_wall:.2f}  ratio (memory): {ours_peak / base_peak:.2f}"
            )

            if not skip_judge:
                self._bench_judge(benchmark, bundle, judge_delay, concurrency)
        finally:
            Submission.objects.filter(benchmark=benchmark).delete()
            shutil.rmtree(work, ignore_errors=True)

    def _bench_judge(self, benchmark, bundle, delay, concurrency):
        server = JudgeServer(delay, lambda content: ANSWER)  # in a process of its own
        judge = benchmark.judges.get(slug="official")
        prices = (judge.price_input_per_mtok, judge.price_output_per_mtok)
        judge.base_url = server.url
        judge.concurrency = concurrency
        # A local judge costs nothing; with a price, spending limits let it judge.
        judge.price_input_per_mtok = judge.price_output_per_mtok = 0
        judge.save()
        try:
            with stages_by_hand():  # nothing queued: each stage is run here
                submission = services.submission_create(
                    benchmark=benchmark,
                    bundle_path=bundle,
                    system_name="Benchmark judge run",
                    judge=judge,
                )
            # Fresh prompts: earlier runs' cached judgments would make no call.
            Judgment.objects.filter(judge_identity__startswith=f"openai@{judge.base_url}").delete()
            _process_without_judging(submission.pk)
            pending = services.judgments_prepare(submission=submission, judge=judge)
            started = time.perf_counter()
            judgments_work(
                submission_id=submission.pk, judge_id=judge.pk, deadline=time.monotonic() + 3600
            )
            wall = time.perf_counter() - started
            ideal = pending * delay / concurrency
            self.stdout.write(
                f"judge: {pending} calls, {delay * 1000:.0f} ms each, concurrency {concurrency}: "
                f"{wall:.2f} s against an ideal {ideal:.2f} s ({100 * (wall / ideal - 1):+.1f}%), "
                f"{pending / wall:.1f} calls/s"
            )
        finally:
            server.stop()
            judge.base_url, judge.concurrency = "", None
            judge.price_input_per_mtok, judge.price_output_per_mtok = prices
            judge.save()
