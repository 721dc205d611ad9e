"""A soak run of the embedded default: `make demo`'s supervised worker (beat inside) runs for
--minutes while a submission of one plug-in's demo upload arrives every --every seconds, each
plug-in in turn; then it waits for what is still running and prints what happened:

- worker deaths (the supervisor's restarts) and broker messages quarantined;
- submissions made, scored, failed and unfinished;
- how long each took from upload to scored (median, max).

Fails (exit 1) on any worker death, any submission not scored, or any quarantined message: each
of those is a message written whole and lost, or a worker that stopped. Run it on a site of its
own (`make soak` gives it var/soak): it migrates and imports the demo boards there.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from evaluation.benchmarks import registry
from evaluation.management.commands.seed_demo import demo_slug
from evaluation.models import Benchmark, Submission
from evaluation.services import submission_create

FINAL = (Submission.Status.SCORED, Submission.Status.FAILED)


class Command(BaseCommand):
    help = "Run the demo's worker for a while under a steady stream of submissions; report."

    def add_arguments(self, parser):
        parser.add_argument("--minutes", type=float, default=60.0)
        parser.add_argument("--every", type=float, default=120.0, help="seconds between uploads")
        parser.add_argument(
            "--grace", type=float, default=600.0, help="seconds to wait for the last ones"
        )

    def handle(self, *args, minutes, every, grace, **options):
        var = Path(settings.VAR_DIR)
        call_command("migrate", "--noinput", verbosity=0)
        runs = self._demo_runs(var / "soak-uploads")
        if not runs:
            raise CommandError("no plug-in has demo uploads to submit")
        log = var / "soak-supervisor.log"
        supervisor = subprocess.Popen(
            [sys.executable, "manage.py", "run_demo", "--no-server", "--max-restarts", "1000"],
            cwd=settings.BASE_DIR,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        started = time.monotonic()
        made: list[int] = []
        try:
            for number, (board, run) in enumerate(itertools.cycle(runs), start=1):
                if time.monotonic() - started >= minutes * 60:
                    break
                submission = submission_create(
                    benchmark=board,
                    bundle_path=run.path,
                    system_name=f"{run.system} · soak {number}",
                    row_group=run.row_group,
                    judge=board.judges.get(slug="offline"),
                    publish=True,
                    options=dict(run.options),
                )
                made.append(submission.pk)
                self.stdout.write(
                    f"{time.monotonic() - started:7.0f} s  submission {submission.pk}: "
                    f"{board.slug}, {run.system}"
                )
                time.sleep(max(0.0, every - (time.monotonic() - started) % every))
                if supervisor.poll() is not None:
                    raise CommandError(f"the supervisor stopped; see {log}")
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                if not Submission.objects.filter(pk__in=made).exclude(status__in=FINAL).exists():
                    break
                time.sleep(2)
        finally:
            supervisor.terminate()
            try:
                supervisor.wait(60)
            except subprocess.TimeoutExpired:
                supervisor.kill()
        self._report(made, log, var, time.monotonic() - started)

    def _demo_runs(self, folder: Path) -> list:
        """(board, demo run) for every plug-in with demo data, its boards imported as the demo
        imports them."""
        call_command("seed_demo", stdout=io.StringIO())
        per_plugin = []
        for plugin in registry().values():
            board = Benchmark.objects.filter(slug=demo_slug(plugin)).first()
            if board is not None:
                runs = plugin.write_demo_runs(folder / plugin.slug)
                per_plugin.append([(board, run) for run in runs])
        # One plug-in after another: the first run of each, then the second of each, ...
        return [
            pair for turn in itertools.zip_longest(*per_plugin) for pair in turn if pair is not None
        ]

    def _report(self, made: list[int], log: Path, var: Path, seconds: float) -> None:
        text = log.read_text()
        deaths = len(re.findall(r"the worker \(pid \d+\) stopped", text))
        quarantine = var / "broker" / "quarantine"
        quarantined = len(os.listdir(quarantine)) if quarantine.is_dir() else 0
        rows = list(
            Submission.objects.filter(pk__in=made).values_list(
                "status", "created_at", "finished_at"
            )
        )
        counts = {status: sum(row[0] == status for row in rows) for status in Submission.Status}
        took = [(done - made_at).total_seconds() for _, made_at, done in rows if done]
        self.stdout.write(f"soak: {seconds / 60:.1f} minutes, {len(made)} submissions")
        self.stdout.write(f"worker deaths: {deaths}; messages quarantined: {quarantined}")
        self.stdout.write(
            "submissions: "
            + ", ".join(f"{count} {status}" for status, count in counts.items() if count)
        )
        if took:
            self.stdout.write(
                f"upload to scored: median {statistics.median(took):.1f} s, max {max(took):.1f} s"
            )
        unfinished = len(made) - counts[Submission.Status.SCORED]
        if deaths or quarantined or unfinished:
            raise CommandError(
                f"soak failed: {deaths} worker deaths, {quarantined} quarantined, "
                f"{unfinished} submissions not scored (the supervisor's log: {log})"
            )
