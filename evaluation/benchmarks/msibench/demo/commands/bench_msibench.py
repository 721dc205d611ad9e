"""Figures for MSI-Bench on the engine, on a synthetic 1,152-case release (no audio).

1. Scoring an upload with an instant judge whose answers are already stored: validation, storing
   the upload, ingest, the validator step, linking the stored judgments (every judge message
   rendered, zero calls) and aggregation through the services, each stage timed, against
   bench.py's plain-Python pass over the same files (the release, the upload, the stored
   answers) in the same run; wall time and peak traced Python memory of each, and their ratios
   (target: 2x at most). The two must give the same numbers.
2. Judge wall time against a local OpenAI-compatible server that waits --judge-delay seconds per
   call, against the ideal calls x delay / concurrency (target: 1.10x at most).

Everything the run creates (a benchmark "bench-msi-bench", its submissions, judgments and
systems) is deleted at the end unless --keep is given, and at the start of the next run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.devtools.bench_support import JudgeServer, measure, staged_run, timed_judging
from evaluation import services
from evaluation.benchmarks.msibench import demo
from evaluation.benchmarks.msibench.demo.bench import score_files, write_offline_answers
from evaluation.benchmarks.msibench.demo.offline import offline_output
from evaluation.benchmarks.msibench.demo.synthetic import (
    FULL_SIZE,
    synthetic_predictions,
    write_predictions,
    write_release,
)
from evaluation.benchmarks.msibench.judge import load_templates
from evaluation.benchmarks.msibench.release import read_release
from evaluation.models import Benchmark, Judge, Judgment, Score, Submission, System
from evaluation.services import pipeline

SLUG = "bench-msi-bench"
SYSTEM_PREFIX = "MSI-Bench bench run"


def _views(user_message: str) -> tuple[dict, dict]:
    """The prediction and rubric JSON of a judge's user message (whatever the template's
    labels: the lines holding them are recognised by their keys)."""
    prediction = rubric = None
    for line in user_message.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        value = json.loads(line[start:])
        if "predicted_action" in value:
            prediction = value
        elif "atomic_criteria" in value:
            rubric = value
    return prediction, rubric


def _answer(content: str) -> str:
    """Answers as the offline heuristic would (so the plain pass can read the same answers from
    a file)."""
    prediction, rubric = _views(content)
    return offline_output(rubric, prediction)


def _staged(benchmark, upload: Path, judge: Judge, run: str):
    return staged_run(
        benchmark,
        upload,
        judge,
        f"{SYSTEM_PREFIX} {run}",
        options={"mode": "turn-based"},
        steps_label="validator step",
    )


def _without_half_width(results: dict) -> dict:
    return {
        lang: {k: v for k, v in row.items() if k != "apr_half_width"}
        for lang, row in results.items()
    }


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        default = settings.BASE_DIR.parent / "shared" / "benchmarks" / "msibench" / "templates"
        parser.add_argument(
            "--templates",
            type=Path,
            default=default,
            help="the harness's judge templates (default: ../shared beside the checkout; "
            "without them, the demo's stand-ins)",
        )
        parser.add_argument("--size", choices=("full", "small"), default="full")
        parser.add_argument("--judge-delay", type=float, default=0.2)
        parser.add_argument("--concurrency", type=int, default=16)
        parser.add_argument("--skip-judge", action="store_true")
        parser.add_argument(
            "--repeat", type=int, default=3, help="timed runs of each pass (the fastest counts)"
        )
        parser.add_argument("--keep", action="store_true", help="keep what the run created")

    def handle(
        self, *args, templates, size, judge_delay, concurrency, skip_judge, repeat, keep, **opts
    ):
        self._clean()  # what an interrupted or --keep run left
        work = Path(tempfile.mkdtemp(prefix="floorboard-msi-bench-"))
        servers = []
        try:
            release_dir = work / "release"
            write_release(release_dir, audio=False, **(FULL_SIZE if size == "full" else {}))
            if not (templates / "judge_system.j2").is_file():
                self.stdout.write(f"no judge templates in {templates}: using the demo's stand-ins")
                templates = work / "templates"
                templates.mkdir()
                (templates / "judge_system.j2").write_text(demo.DEMO_SYSTEM_TEMPLATE, "utf-8")
                (templates / "judge_user.j2").write_text(demo.DEMO_USER_TEMPLATE, "utf-8")
            started = time.perf_counter()
            benchmark = services.benchmark_import(
                slug=SLUG,
                directory=release_dir,
                plugin="msi-bench",
                name="MSI-Bench (benchmark run)",
                is_demo=True,
                options={"templates": str(templates), "audio": "none"},
            ).benchmark
            self.stdout.write(
                f"release: {benchmark.tasks.count()} cells imported in "
                f"{time.perf_counter() - started:.2f} s"
            )
            release = read_release(release_dir, check_audio=False)
            specs = release.specs()
            upload = work / "weak.jsonl"
            write_predictions(upload, synthetic_predictions(specs, profile="weak"))
            answers = work / "answers.jsonl"
            stored = write_offline_answers(release_dir, upload, answers, run_mode="turn-based")
            instant = JudgeServer(0.0, _answer)
            servers.append(instant)
            judge = Judge.objects.create(
                benchmark=benchmark,
                slug="bench-instant",
                name="Instant local judge",
                provider=Judge.Provider.OPENAI,
                models_by_kind={"rubric": "bench-model"},
                base_url=instant.url,
                # A local judge costs nothing; with a price, spending limits let it judge.
                price_input_per_mtok=0,
                price_output_per_mtok=0,
                send_sampling_params=False,
                concurrency=concurrency,
            )
            self._scoring(benchmark, judge, release, upload, answers, templates, stored, repeat)
            if not skip_judge:
                servers.append(self._judging(benchmark, upload, judge_delay, concurrency))
        finally:
            for server in servers:
                server.stop()
            if not keep:
                self._clean()
            shutil.rmtree(work, ignore_errors=True)

    def _scoring(self, benchmark, judge, release, upload, answers, templates, stored, repeat):
        judge_templates = load_templates(templates)
        release_dir = release.root

        def plain():
            # A pass over the files: the release, the upload and the stored answers.
            return score_files(
                release_dir=release_dir,
                prediction_files=[upload],
                judge_outputs=answers,
                run_mode="turn-based",
                templates=judge_templates,
            )

        baseline, plain_wall, plain_peak = measure(plain, repeat)
        # A first submission asks the instant judge once per pair; later ones find every answer
        # stored, as a re-score or a second system with the same rows would.
        _staged(benchmark, upload, judge, "(warm-up)")
        runs = iter(range(1, repeat + 2))
        stages: list[dict] = []
        peaks: dict = {}

        def engine():
            found = _staged(benchmark, upload, judge, str(next(runs)))
            if "aggregate" not in found.seconds:
                raise CommandError("a judgment was called again: the warm-up left one unsettled")
            stages.append(found.seconds)
            peaks.update(found.peaks)
            return found.submission.scores.get(judge=judge).results

        results, engine_wall, engine_peak = measure(engine, repeat)
        # Each stage's lap restarts the peak: the run's is the highest of its stages'.
        engine_peak = max(engine_peak, *peaks.values())
        if _without_half_width(results) != baseline["results"]:
            raise CommandError("the engine and the plain pass disagree: a bug")
        score = Score.objects.filter(submission__benchmark=benchmark, judge=judge).latest("pk")
        made, slices_wall, slices_peak = measure(
            lambda: pipeline.slices_store(score_id=score.pk), repeat
        )
        if not made:
            raise CommandError("the slice results were not stored: a bug")
        base_cells = sum(row["n"] for row in results.values())
        self.stdout.write(
            f"upload: {upload.stat().st_size / 1e6:.2f} MB, {base_cells} base cases, "
            f"{stored} judged pairs (answers stored), templates from {templates}"
        )
        seconds = min(stages, key=lambda found: sum(found.values()))
        self.stdout.write(
            "engine stages: "
            + ", ".join(f"{name} {value:.2f} s" for name, value in seconds.items())
        )
        self.stdout.write(
            "engine stages' peak traced memory: "
            + ", ".join(f"{name} {value / 2**20:.1f} MiB" for name, value in peaks.items())
        )
        self.stdout.write(
            f"engine (validate, store, ingest, validator step, link judgments, "
            f"aggregate): {engine_wall:.2f} s, peak traced memory {engine_peak / 2**20:.1f} MiB"
        )
        self.stdout.write(
            f"plain pass (read the release, validate, validator, render, parse stored answers, "
            f"aggregate): {plain_wall:.2f} s, peak traced memory {plain_peak / 2**20:.1f} MiB"
        )
        self.stdout.write(
            f"slice results, a task of their own once the score is saved (the plain pass has "
            f"none; not in the ratio): {slices_wall:.2f} s, peak traced memory "
            f"{slices_peak / 2**20:.1f} MiB"
        )
        core = seconds["validate"] + seconds["validator step"] + seconds["aggregate"]
        self.stdout.write(
            f"ratio: wall {engine_wall / plain_wall:.2f}x (validation + validator + aggregation "
            f"alone: {core / plain_wall:.2f}x), memory {engine_peak / plain_peak:.2f}x "
            "(target 2x at most); same numbers: yes"
        )

    def _judging(self, benchmark, upload, delay, concurrency):
        server = JudgeServer(delay, _answer)
        judge = Judge.objects.create(
            benchmark=benchmark,
            slug="bench-latency",
            name=f"Local judge, {delay * 1000:.0f} ms per call",
            provider=Judge.Provider.OPENAI,
            models_by_kind={"rubric": "bench-model"},
            base_url=server.url,
            # A local judge costs nothing; with a price, spending limits let it judge.
            price_input_per_mtok=0,
            price_output_per_mtok=0,
            send_sampling_params=False,
            concurrency=concurrency,
        )
        spent: list[float] = []
        with timed_judging(spent):
            _staged(benchmark, upload, judge, "(latency)")
        calls = server.calls
        ideal = calls * delay / concurrency
        wall = sum(spent)
        self.stdout.write(
            f"judge: {calls} calls at {delay * 1000:.0f} ms, concurrency {concurrency}: "
            f"{wall:.2f} s against the ideal {ideal:.2f} s = {wall / ideal:.3f}x "
            "(target 1.10x at most)"
        )
        return server

    def _clean(self):
        benchmark = Benchmark.objects.filter(slug=SLUG).first()
        if benchmark is None:
            return
        submissions = Submission.objects.filter(benchmark=benchmark)
        bundles = [s.bundle.name for s in submissions if s.bundle]
        systems = list(submissions.values_list("system_id", flat=True))
        submissions.delete()
        Judgment.objects.filter(prompt_version__benchmark=benchmark).delete()
        benchmark.delete()
        System.objects.filter(pk__in=systems, name__startswith=SYSTEM_PREFIX).delete()
        from django.core.files.storage import default_storage

        for name in bundles:
            default_storage.delete(name)
