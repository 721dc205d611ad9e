"""Figures for Audio MultiChallenge on the engine, on a synthetic 452-task, 1,712-item set.

1. Judge wall time: a submission judged by a local OpenAI-compatible server that waits
   --judge-delay seconds per call (one call per task and rubric item), against the ideal
   calls x delay / concurrency (target: 1.10x at most).
2. Aggregation: the engine's (the stored judgments read back, every task's outcome, APR and ARS
   with their bootstrap intervals, contributions and slices, the score saved) against bench.py's
   plain-Python pass over the same answers read from a file (parse, decide, aggregate), in the
   same run; wall time and peak traced Python memory of each, and their ratios (target: 2x at
   most). Their APR and ARS must be equal, and their 95% intervals too: the command stops at
   once on different values, and fails after printing every figure on different intervals.
3. For context, the whole pipeline with every answer already stored (validate, store, ingest,
   link judgments, aggregate) against bench.py's whole plain pass (read the dataset, the
   replies and the answers, aggregate).

The set has no audio (transcripts only) and a stand-in judge prompt written here with the real
prompt's placeholders; the replies are a strong invented system's, and the judge answers as the
offline heuristic would, in the judge's own formats. Everything the run creates (a benchmark
"bench-audio-multichallenge", its submissions, judgments and systems) is deleted at the end
unless --keep is given, and at the start of the next run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.devtools.bench_support import (
    JudgeServer,
    measure,
    staged_run,
    stages_by_hand,
    timed_judging,
)
from evaluation import services
from evaluation.benchmarks.audiomc.dataset import AXES, read_dataset
from evaluation.benchmarks.audiomc.demo.bench import reference_pass
from evaluation.benchmarks.audiomc.demo.synthetic import (
    SIZES,
    responses_jsonl,
    synthetic_judgments,
    synthetic_records,
    synthetic_responses,
    write_jsonl_export,
)
from evaluation.benchmarks.audiomc.judge import (
    HISTORY_TOKEN,
    RUBRIC_TOKEN,
    TEMPLATE_BEGIN,
    TEMPLATE_END,
    judge_message,
    read_judge_prompt,
)
from evaluation.benchmarks.audiomc.judgments import read_judgments_file
from evaluation.benchmarks.audiomc.metrics import aggregate, task_results
from evaluation.benchmarks.audiomc.responses import parse_submission
from evaluation.models import Benchmark, Judge, Judgment, Submission, System
from evaluation.services import pipeline

SLUG = "bench-audio-multichallenge"
PLUGIN = "audio-multichallenge"
SYSTEM_PREFIX = "Audio MultiChallenge bench run"
OPTIONS = {"output_modality": "text"}
SCOPES = ("overall", *(f"by_axis.{axis}" for axis in AXES))

# Written by code with the placeholders the real prompt has; the real prompt is never copied.
BENCH_PROMPT = f"""\
Stand-in for the Audio MultiChallenge judge prompt, written by the bench_audiomc command.
{TEMPLATE_BEGIN}
Decide whether the final assistant reply of the conversation meets the rubric item.

# Conversation
{HISTORY_TOKEN}

# Rubric item
{RUBRIC_TOKEN}

Answer with a JSON object holding "explanation" (a string) and "criteria_met" (a boolean).
{TEMPLATE_END}
"""


def _node(results: dict, scope: str) -> dict:
    node = results
    for part in scope.split("."):
        node = node[part]
    return node


def _disagreements(engine: dict, plain: dict, *, intervals: bool) -> list[str]:
    """Where the engine's APR or ARS differs from the plain pass's, overall and per axis: the
    values (count, total, exact value, percent), or with ``intervals`` the 95% intervals."""
    found = []
    for scope in SCOPES:
        for metric in ("apr", "ars"):
            mine, theirs = _node(engine, scope)[metric], _node(plain, scope)[metric]
            keys = sorted(
                key
                for key in set(mine) | set(theirs)
                if (key == "ci") == intervals and mine.get(key) != theirs.get(key)
            )
            if keys:
                found.append(
                    f"{scope}.{metric}: "
                    + ", ".join(f"{k} {mine.get(k)!r} != {theirs.get(k)!r}" for k in keys)
                )
    return found


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("--size", choices=tuple(SIZES), default="full")
        parser.add_argument("--judge-delay", type=float, default=0.2)
        parser.add_argument(
            "--concurrency",
            type=int,
            default=settings.JUDGE_CONCURRENCY,
            help="the bench judge's concurrency (default: the site's, "
            f"{settings.JUDGE_CONCURRENCY})",
        )
        parser.add_argument(
            "--repeat", type=int, default=3, help="timed runs of each pass (the fastest counts)"
        )
        parser.add_argument("--keep", action="store_true", help="keep what the run created")

    def handle(self, *args, size, judge_delay, concurrency, repeat, keep, **opts):
        if concurrency < 1 or judge_delay <= 0 or repeat < 1:
            raise CommandError("--concurrency and --repeat must be 1 or more, --judge-delay > 0")
        self._clean()  # what an interrupted or --keep run left
        work = Path(tempfile.mkdtemp(prefix="floorboard-audiomc-bench-"))
        server = None
        try:
            paths = self._write(work, SIZES[size])
            started = time.perf_counter()
            benchmark = services.benchmark_import(
                slug=SLUG,
                directory=paths["dataset"].parent,
                plugin=PLUGIN,
                name="Audio MultiChallenge (benchmark run)",
                is_demo=True,
                options={"judge-prompt": str(paths["prompt"])},
            ).benchmark
            tasks = benchmark.tasks.all()
            items = sum(len(task.spec["rubric"]) for task in tasks)
            self.stdout.write(
                f"dataset: {len(tasks)} tasks, {items} rubric items imported in "
                f"{time.perf_counter() - started:.2f} s (stand-in judge prompt, no audio)"
            )
            server = JudgeServer(judge_delay, paths["answers"].get)
            judge = Judge.objects.create(
                benchmark=benchmark,
                slug="bench-latency",
                name=f"Local judge, {judge_delay * 1000:.0f} ms per call",
                provider=Judge.Provider.OPENAI,
                models_by_kind={"rubric_item": "bench-model"},
                base_url=server.url,
                # A local judge costs nothing; with a price, spending limits let it judge.
                price_input_per_mtok=0,
                price_output_per_mtok=0,
                send_sampling_params=False,
                concurrency=concurrency,
            )
            submission = self._judging(benchmark, paths, judge, server, judge_delay, concurrency)
            apart = self._aggregation(submission, judge, paths, repeat)
            self._whole(benchmark, judge, paths, repeat)
            if apart:
                raise CommandError(
                    "the engine's APR/ARS intervals differ from the plain pass's (see above)"
                )
        finally:
            if server is not None:
                server.stop()
            if not keep:
                self._clean()
            shutil.rmtree(work, ignore_errors=True)

    def _write(self, work: Path, n_tasks: int) -> dict:
        """The dataset (JSONL export), the stand-in prompt, a strong submission, its answers as
        the plain pass reads them (judgments.jsonl) and as the server gives them (by message)."""
        dataset = write_jsonl_export(synthetic_records(n_tasks, seed=0), work / "dataset")
        prompt = work / "judge_prompt.txt"
        prompt.write_text(BENCH_PROMPT, "utf-8")
        template = read_judge_prompt(prompt).template
        tasks = read_dataset(dataset).tasks
        lines = synthetic_responses(tasks, "strong", seed=0)
        upload = work / "responses.jsonl"
        upload.write_text(responses_jsonl(lines), "utf-8")
        replies = {line["id"]: line["response"] or "" for line in lines}
        # Every answer parses at the first attempt, in one of the judge's formats: one call per
        # item, so that the calls are exactly the items.
        rows = synthetic_judgments(
            tasks, replies, seed=0, retry_rate=0, unparseable_rate=0, failure_rate=0
        )
        judgments = work / "judgments.jsonl"
        with judgments.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        specs = {task.task_id: task.spec for task in tasks}
        answers = {
            judge_message(
                template,
                spec=specs[row["id"]],
                response=replies[row["id"]],
                rubric_index=row["rubric_index"],
            ): row["raw"]
            for row in rows
        }
        return {
            "dataset": dataset,
            "prompt": prompt,
            "upload": upload,
            "judgments": judgments,
            "answers": answers,
        }

    def _judging(self, benchmark, paths, judge, server, delay, concurrency) -> Submission:
        spent: list[float] = []
        with timed_judging(spent):
            submission = staged_run(
                benchmark, paths["upload"], judge, f"{SYSTEM_PREFIX} (judge)", options=OPTIONS
            ).submission
        calls, wall = server.calls, sum(spent)
        if server.unknown.value:
            raise CommandError(
                f"{server.unknown.value} judge messages differ from the ones rendered here: a bug"
            )
        ideal = calls * delay / concurrency
        self.stdout.write(
            f"judge: {calls} calls at {delay * 1000:.0f} ms, concurrency {concurrency}: "
            f"{wall:.2f} s against the ideal {ideal:.2f} s = {wall / ideal:.3f}x "
            "(target 1.10x at most)"
        )
        return submission

    def _aggregation(self, submission, judge, paths, repeat) -> int:
        tasks = read_dataset(paths["dataset"]).tasks
        parsed = parse_submission(
            paths["upload"].read_bytes(),
            task_ids=[task.task_id for task in tasks],
            output_modality="text",
            file_name=paths["upload"].name,
        )

        def plain():
            # The same answers from a file: parsed and decided, every task's outcome, aggregated.
            stored = read_judgments_file(
                paths["judgments"], tasks=tasks, responded=parsed.responses
            )
            results = task_results(
                tasks=tasks, responded=parsed.responses, outcomes=stored.outcomes
            )
            return aggregate(results, ignored_judgments=stored.ignored)

        def engine():
            return pipeline.submission_aggregate(submission=submission, judge=judge).results

        def slices():
            return pipeline.slices_store(score_id=submission.scores.get(judge=judge).pk)

        baseline, plain_wall, plain_peak = measure(plain, repeat)
        with stages_by_hand():  # the slices' task is run below, on its own
            results, engine_wall, engine_peak = measure(engine, repeat)
        made, slices_wall, slices_peak = measure(slices, repeat)
        if not made:
            raise CommandError("the slice results were not stored: a bug")
        scored = submission.scores.get(judge=judge).results
        wrong = _disagreements(results, baseline, intervals=False)
        wrong += _disagreements(scored, baseline, intervals=False)
        if wrong:
            raise CommandError(
                "the engine's APR/ARS differ from the plain pass's: " + "; ".join(wrong[:6])
            )
        apart = _disagreements(results, baseline, intervals=True)
        overall = results["overall"]
        self.stdout.write(
            f"results: {overall['n']} tasks, {overall['rubric_items']} items, "
            f"APR {overall['apr']['pct']:.2f}% {overall['apr']['ci']}, "
            f"ARS {overall['ars']['pct']:.2f}% {overall['ars']['ci']}"
        )
        self.stdout.write(
            f"aggregation, engine (stored judgments read back, outcomes, APR/ARS with intervals, "
            f"contributions, score saved): {engine_wall:.3f} s, peak traced memory "
            f"{engine_peak / 2**20:.1f} MiB"
        )
        self.stdout.write(
            f"slice results, a task of their own once the score is saved (the plain pass has "
            f"none; not in the ratio): {slices_wall:.3f} s, peak traced memory "
            f"{slices_peak / 2**20:.1f} MiB"
        )
        self.stdout.write(
            f"aggregation, plain pass (answers file parsed, outcomes, APR/ARS with intervals): "
            f"{plain_wall:.3f} s, peak traced memory {plain_peak / 2**20:.1f} MiB"
        )
        self.stdout.write(
            f"aggregation ratio: wall {engine_wall / plain_wall:.2f}x, memory "
            f"{engine_peak / plain_peak:.2f}x (target 2x at most); "
            "same APR/ARS overall and per axis: yes"
        )
        if apart:
            self.stdout.write(
                f"INTERVALS DIFFER in {len(apart)} of {2 * len(SCOPES)} places: "
                + "; ".join(apart[:3])
            )
        else:
            self.stdout.write("same 95% intervals: yes")
        return len(apart)

    def _whole(self, benchmark, judge, paths, repeat) -> None:
        def plain():
            return reference_pass(
                dataset=paths["dataset"].parent,
                responses=paths["upload"],
                judgments=paths["judgments"],
            )

        runs = iter(range(1, repeat + 2))
        stages: list[dict] = []

        def engine():
            run = staged_run(
                benchmark,
                paths["upload"],
                judge,
                f"{SYSTEM_PREFIX} {next(runs)}",
                options=OPTIONS,
            )
            if "aggregate" not in run.seconds:
                raise CommandError("a judgment was called again: the first run left one open")
            stages.append(run.seconds)
            peaks.append(run.peak)
            return run.submission.scores.get(judge=judge).results

        peaks: list[int] = []
        baseline, plain_wall, plain_peak = measure(plain, repeat)
        results, engine_wall, engine_peak = measure(engine, repeat)
        engine_peak = max(engine_peak, peaks[-1])  # the traced run is the last
        wrong = _disagreements(results, baseline, intervals=False)
        if wrong:
            raise CommandError(
                "the engine's APR/ARS differ from the plain pass's: " + "; ".join(wrong[:6])
            )
        seconds = min(stages, key=lambda found: sum(found.values()))
        self.stdout.write(
            "whole pipeline, answers stored (stages of the fastest run): "
            + ", ".join(f"{name} {value:.2f} s" for name, value in seconds.items())
        )
        self.stdout.write(
            f"whole pipeline: engine {engine_wall:.2f} s, peak traced memory "
            f"{engine_peak / 2**20:.1f} MiB; plain pass {plain_wall:.2f} s, "
            f"{plain_peak / 2**20:.1f} MiB; ratio wall {engine_wall / plain_wall:.2f}x, "
            f"memory {engine_peak / plain_peak:.2f}x; same APR/ARS values: yes"
        )

    def _clean(self):
        benchmark = Benchmark.objects.filter(slug=SLUG).first()
        if benchmark is None:
            return
        found = Submission.objects.filter(benchmark=benchmark)
        bundles = [s.bundle.name for s in found if s.bundle]
        systems = list(found.values_list("system_id", flat=True))
        found.delete()
        Judgment.objects.filter(prompt_version__benchmark=benchmark).delete()
        benchmark.delete()
        System.objects.filter(pk__in=systems, name__startswith=SYSTEM_PREFIX).delete()
        from django.core.files.storage import default_storage

        for name in bundles:
            default_storage.delete(name)
