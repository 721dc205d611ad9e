"""Figures of the VAD step run the way a worker runs it (pipeline.step_run: rows claimed in
chunks, each chunk's runs batched through the model, stored audio read back, detections saved):

1. throughput: audio seconds per CPU second over --runs runs of --seconds each at 24 kHz (so
   resampling counts), and the projected time of a full submission (4,000 runs of 100 s) on one
   worker and on four;
2. peak memory while processing bundles of 400 and 4,000 short, mostly silent runs: of the VAD
   step, and of validation plus ingest, each in a fresh process (peak resident set).

Every measurement runs in a child process with its own SQLite database and media folder under a
temporary directory, so nothing touches the site's data.

    python manage.py bench_duplexmpe_vad [--runs 32] [--seconds 100] [--memory-counts 400,4000]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from evaluation.benchmarks.duplexmpe.demo import synthetic
from evaluation.benchmarks.duplexmpe.manifest import ManifestTurn, Scenario

FULL_RUNS, FULL_RUN_S = 4000, 100.0
SLUG = "duplex-mpe-bench"


def _tiny_scenarios(count: int) -> list[Scenario]:
    """``count`` runs of three half-second turns (N2, T, N1) after a half-second preamble: with
    the answer and the scheduler's waits, about 7 s of mostly silent output each."""
    runs = []
    for n in range(count // 2):
        for condition in ("explicit", "implicit"):
            sid = f"q{n:05d}"
            turns = tuple(
                ManifestTurn(i, speaker, label, text, f"clips/{i}.wav", 500)
                for i, (speaker, label, text) in enumerate(
                    [("A", "N2", "Ben, look."), ("B", "T", "Aria, how much?"), ("C", "N1", "Aria.")]
                )
            )
            runs.append(Scenario(sid, condition, sid, {"A": "ryan", "B": "aiden", "C": "eric"},
                                 "Nine dollars.", "Hello.", "clips/p.wav", 500, turns))  # fmt: skip
    return runs


def _write_bundle(path: Path, runs, *, seconds: float | None, sample_rate: int) -> None:
    """audio/ and schedule/ of the simulated attentive system, zipped as they are written; with
    ``seconds`` every output channel is padded with silence to that length."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        for run in runs:
            log, said = synthetic.simulate(run, "good", seed=1)
            stem = synthetic.run_stem(run)
            archive.writestr(f"schedule/{stem}.json", json.dumps(log))
            end_ms = int(round(log["stream_end"] * 1000))
            if seconds is not None:
                end_ms = max(end_ms, int(seconds * 1000))
            with tempfile.NamedTemporaryFile(suffix=".wav") as wav:
                synthetic.write_output_channel(Path(wav.name), said, stream_end_ms=end_ms,
                                               sample_rate=sample_rate)  # fmt: skip
                archive.write(wav.name, f"audio/{stem}.wav")


def _child(args: list[str], var: Path) -> dict:
    env = {**os.environ, "FLOORBOARD_VAR_DIR": str(var), "CELERY_BROKER_URL": "memory://",
           "DATABASE_URL": f"sqlite:///{var / 'bench.sqlite3'}"}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "manage.py", "bench_duplexmpe_vad", *args],
        cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"child {args[:2]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=32)
        parser.add_argument("--seconds", type=float, default=100.0)
        parser.add_argument("--memory-counts", default="400,4000")
        parser.add_argument("--child", choices=["setup", "ingest", "vad"], help="internal")
        parser.add_argument("--bundle", type=Path, help="internal")
        parser.add_argument("--count", type=int, default=0, help="internal")
        parser.add_argument("--tiny", action="store_true", help="internal")

    def handle(self, *args, child=None, **options):
        if child:
            found = getattr(self, f"_child_{child}")(options)
            self.stdout.write(json.dumps(found))
            return
        figures = {"machine_cpus": os.cpu_count()}
        with tempfile.TemporaryDirectory() as tmp:
            figures["throughput"] = self._throughput(Path(tmp), options["runs"],
                                                     options["seconds"])  # fmt: skip
        counts = [int(c) for c in options["memory_counts"].split(",") if c]
        figures["memory"] = {}
        for count in counts:
            with tempfile.TemporaryDirectory() as tmp:
                figures["memory"][str(count)] = self._memory(Path(tmp), count)
        self.stdout.write(json.dumps(figures, indent=2))

    # --- the parent: one temporary site per measurement ---

    def _prepare(self, root: Path, runs, *, seconds, sample_rate) -> tuple[Path, Path]:
        var = root / "var"
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"],
                       cwd=settings.BASE_DIR, check=True, capture_output=True,
                       env={**os.environ, "FLOORBOARD_VAR_DIR": str(var),
                            "DATABASE_URL": f"sqlite:///{var / 'bench.sqlite3'}"})  # fmt: skip
        bundle = root / "bundle.zip"
        started = time.perf_counter()
        _write_bundle(bundle, runs, seconds=seconds, sample_rate=sample_rate)
        self.stderr.write(f"wrote {len(runs)} runs in {time.perf_counter() - started:.0f} s")
        return var, bundle

    def _throughput(self, root: Path, count: int, seconds: float) -> dict:
        runs = synthetic.scenarios(max(1, count // 2), seed=3)[:count]
        var, bundle = self._prepare(root, runs, seconds=seconds, sample_rate=24000)
        _child(["--child", "setup", "--count", str(len(runs))], var)
        ingest = _child(["--child", "ingest", "--bundle", str(bundle)], var)
        found = _child(["--child", "vad"], var)
        rate = found["audio_s"] / found["cpu_s"]
        full_cpu = FULL_RUNS * FULL_RUN_S / rate
        return {
            "runs": len(runs),
            "sample_rate": 24000,
            **found,
            "audio_s_per_cpu_s": round(rate, 1),
            "ingest_wall_s": ingest["wall_s"],
            "projection_4000_runs_of_100_s": {
                "cpu_s": round(full_cpu),
                "one_worker_min": round(full_cpu / 60, 1),
                "four_workers_min": round(full_cpu / 4 / 60, 1),
            },
        }

    def _memory(self, root: Path, count: int) -> dict:
        runs = _tiny_scenarios(count)
        var, bundle = self._prepare(root, runs, seconds=None, sample_rate=16000)
        _child(["--child", "setup", "--count", str(count), "--tiny"], var)
        ingest = _child(["--child", "ingest", "--bundle", str(bundle)], var)
        found = _child(["--child", "vad"], var)
        return {
            "runs": count,
            "bundle_mb": round(bundle.stat().st_size / 2**20, 1),
            "validate_and_ingest_peak_rss_mb": ingest["peak_rss_mb"],
            "vad_step_peak_rss_mb": found["peak_rss_mb"],
            "vad_step_rss_before_mb": found["rss_before_mb"],
            "audio_s": found["audio_s"],
            "cpu_s": found["cpu_s"],
        }

    # --- the children: each a fresh process on the temporary site ---

    def _child_setup(self, options) -> dict:
        """The benchmark's tasks, written straight to the database (the VAD needs no clips)."""
        from evaluation.benchmarks.base import PromptSource
        from evaluation.benchmarks.duplexmpe import judge as judges
        from evaluation.models import Benchmark, Judge, Task
        from evaluation.services.benchmarks import prompts_add

        count = options["count"]
        if options["tiny"]:
            runs = _tiny_scenarios(count)
        else:
            runs = synthetic.scenarios(max(1, count // 2), seed=3)[:count]
        benchmark = Benchmark.objects.create(slug=SLUG, name="VAD bench", plugin="duplex-mpe")
        Task.objects.bulk_create(
            [Task(benchmark=benchmark, task_id=synthetic.run_stem(r), spec=r.as_dict())
             for r in runs], batch_size=500)  # fmt: skip
        prompts_add(benchmark=benchmark,
                    prompts=[PromptSource(k, judges.template(k)) for k in judges.KINDS])  # fmt: skip
        Judge.objects.create(benchmark=benchmark, slug="offline", name="offline",
                             provider=Judge.Provider.OFFLINE)  # fmt: skip
        return {"tasks": len(runs)}

    def _child_ingest(self, options) -> dict:
        """Validation and ingest of the bundle (storing every run's audio), nothing else."""
        from evaluation.models import Benchmark, Submission
        from evaluation.services import pipeline
        from evaluation.services.submissions import submission_create

        benchmark = Benchmark.objects.get(slug=SLUG)
        started = time.perf_counter()
        submission = submission_create(benchmark=benchmark, bundle_path=options["bundle"],
                                       system_name="bench",
                                       judge=benchmark.judges.get(slug="offline"))  # fmt: skip
        pipeline.submission_ingest(submission_id=submission.pk)
        submission = Submission.objects.get(pk=submission.pk)
        assert submission.status == Submission.Status.DETECTING, submission.error
        return {"wall_s": round(time.perf_counter() - started, 1), "peak_rss_mb": _peak_rss_mb()}

    def _child_vad(self, options) -> dict:
        """The VAD step exactly as a worker runs it, timed; peak memory of this process."""
        from evaluation.benchmarks.duplexmpe import vad
        from evaluation.models import Submission, TaskResult
        from evaluation.services import pipeline

        submission = Submission.objects.get(benchmark__slug=SLUG)
        vad.load_session()  # the model is loaded once per worker; not part of a submission
        before = _peak_rss_mb()
        cpu, wall = time.process_time(), time.perf_counter()
        pipeline.step_run(submission_id=submission.pk, index=0)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        peak = _peak_rss_mb()  # before reading the results back, which is not the step's doing
        rows = TaskResult.objects.filter(submission=submission)
        audio = 0.0
        for found in rows.values_list("detection", flat=True).iterator(chunk_size=200):
            audio += found.get("duration_s") or 0
        return {
            "audio_s": round(audio, 1),
            "cpu_s": round(cpu, 2),
            "wall_s": round(wall, 2),
            "runs_left": rows.filter(steps_done=0).count(),
            "rss_before_mb": before,
            "peak_rss_mb": peak,
        }
