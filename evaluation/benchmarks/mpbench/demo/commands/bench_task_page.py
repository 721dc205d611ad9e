"""How long a task's page takes at the largest transcript validation allows.

A demo run of the benchmark is submitted with one task's response holding MAX_WORD_CHUNKS word
chunks (timed words, as the harness writes them), scored by the offline judge in this process,
and published; then the task's page is asked for --repeat times through the site's whole
request path (middleware, view, templates) by a reader without a session. The first view reads
the upload and lays the task out; later ones are served whole from the response cache (or, with
that cache off, find the layout kept by the drill-down cache and only render). Prints each time
in milliseconds and the median of the later ones.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import zipfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.test import Client
from django.test.utils import override_settings

from evaluation.benchmarks.mpbench.limits import MAX_WORD_CHUNKS
from evaluation.benchmarks.mpbench.plugin import plugin
from evaluation.models import Submission, TaskResult
from evaluation.services import benchmark_import, submission_create
from evaluation.services.work import inline


def _inflated(source: Path, target: Path) -> str:
    """The zip again, with its first response.json holding MAX_WORD_CHUNKS words; the task."""
    chunks = [
        {"text": f" w{n}", "timestamp": [round(n * 0.2, 3), round(n * 0.2 + 0.15, 3)]}
        for n in range(MAX_WORD_CHUNKS)
    ]
    big = json.dumps({"text": "".join(c["text"] for c in chunks), "chunks": chunks})
    task = None
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if task is None and info.filename.endswith("/response.json"):
                task = info.filename.split("/")[-2]
                data = big.encode()
            new.writestr(info, data)
    if task is None:
        raise CommandError("the demo run has no response.json")
    return task


class Command(BaseCommand):
    help = "Time a task page whose transcript is as large as validation allows."

    def add_arguments(self, parser):
        parser.add_argument("--repeat", type=int, default=7)

    def handle(self, *args, **options):
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder)
            plugin.write_demo_source(work / "source")
            benchmark = benchmark_import(
                slug="bench-task-page", directory=work / "source", plugin=plugin.slug,
                is_demo=True,
            ).benchmark  # fmt: skip
            run = plugin.write_demo_runs(work / "uploads")[0]
            task_id = _inflated(run.path, work / "largest.zip")
            with inline():
                submission = submission_create(
                    benchmark=benchmark,
                    bundle_path=work / "largest.zip",
                    system_name="Largest transcript",
                    judge=benchmark.judges.get(slug="offline"),
                    allow_partial=True,
                    publish=True,
                )
            submission = Submission.objects.get(pk=submission.pk)
            if submission.status != Submission.Status.SCORED:
                raise CommandError(
                    f"the run was not scored: {submission.status} {submission.error}"
                )
            row = TaskResult.objects.get(submission=submission, task__task_id=task_id)
            url = f"/submissions/{submission.pk}/tasks/{task_id}/"
            client = Client()
            times = []
            # The test client's host name, whatever the site's own are.
            with override_settings(ALLOWED_HOSTS=["testserver"]):
                for _ in range(options["repeat"]):
                    started = time.perf_counter()
                    response = client.get(url)
                    times.append(1000 * (time.perf_counter() - started))
                    if response.status_code != 200:
                        raise CommandError(f"{url} answered {response.status_code}")
            self.stdout.write(
                f"task {task_id}: {MAX_WORD_CHUNKS:,} word chunks in its response, "
                f"{len(response.content):,} bytes of page (task result {row.pk})"
            )
            self.stdout.write("each view, ms: " + ", ".join(f"{t:.0f}" for t in times))
            later = times[1:] or times
            self.stdout.write(
                f"first view {times[0]:.0f} ms (reads the upload); later views median "
                f"{statistics.median(later):.0f} ms"
            )
            submission.delete()
