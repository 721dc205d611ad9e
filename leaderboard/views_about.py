"""A benchmark's About page, from its plug-in's declarations: what it measures, how the board
ranks, the scoring rules in plain words, the judge (and what is known of its agreement with
people), the upload format with an example to download, how to submit, and how to cite it."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import BenchmarkPlugin
from evaluation.calibration import methods_paragraph
from evaluation.models import Benchmark
from evaluation.run_config import CONTAMINATION
from evaluation.run_config import FIELDS as RUN_CONFIG_FIELDS
from evaluation.run_config import HELP as RUN_CONFIG_HELP
from evaluation.slices import ALPHA, MIN_TASKS, metric_methods
from leaderboard.response_cache import reader_cached
from leaderboard.selectors import board_columns
from leaderboard.views import ranking_note

# One example per plug-in is written at a time (the demo writer makes a few MB of audio).
_EXAMPLE_LOCK = threading.Lock()


def example_upload_path(plugin) -> Path | None:
    """An upload in the benchmark's format, written by the plug-in's own demo writer (invented
    tasks and system) once and kept under var/example-uploads; None when the plug-in has no
    demo. It is the first demo run, which each plug-in makes a good, complete run in the
    benchmark's primary format (see BenchmarkPlugin.write_demo_runs)."""
    folder = Path(settings.VAR_DIR) / "example-uploads" / plugin.slug
    with _EXAMPLE_LOCK:
        found = sorted(p for p in folder.glob("example*") if p.is_file())
        if found:
            return found[0]
        Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="example-", dir=settings.VAR_DIR))
        try:
            try:
                runs = plugin.write_demo_runs(work)
            except NotImplementedError:
                runs = []
            if not runs:
                return None
            first = runs[0].path
            folder.mkdir(parents=True, exist_ok=True)
            suffix = "".join(first.suffixes) or ".zip"
            target = folder / f"example{suffix}"
            shutil.move(str(first), target)
            return target
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _metric_rows(benchmark: Benchmark) -> list[dict]:
    rows = []
    for column in board_columns(benchmark=benchmark):
        metric = column.metric
        rows.append(
            {
                "group": metric.group,
                "label": metric.label,
                "type": metric.type,
                "better": "higher" if metric.higher_is_better else "lower",
                "chance": metric.chance,
                "interval": {
                    "wilson": "95% Wilson score interval",
                    "bootstrap": "95% bootstrap interval",
                }.get(metric.interval, "none"),
                "unit": metric.unit,
                "description": metric.description,
            }
        )
    return rows


@reader_cached("board")
@require_safe
def benchmark_about(request, slug: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    plugin = get_plugin(benchmark.plugin)
    columns = board_columns(benchmark=benchmark)
    official = benchmark.judges.filter(is_official=True).first()
    site = request.build_absolute_uri("/").rstrip("/")
    return render(
        request,
        "leaderboard/about.html",
        {
            "benchmark": benchmark,
            "plugin": plugin,
            "metrics": _metric_rows(benchmark),
            "methods": metric_methods(plugin),
            "calibration_method": methods_paragraph(plugin),
            "min_tasks": MIN_TASKS,
            "alpha": ALPHA,
            "ranking_note": ranking_note(plugin=plugin, columns=columns, grouped=True),
            "judges": list(benchmark.judges.order_by("-is_official", "slug")),
            "official": official,
            "task_count": benchmark.tasks.count(),
            "max_upload_gb": plugin.max_upload_bytes / 1024**3,
            "has_example": _has_demo_writer(plugin),
            "site": site,
            "api_url": site + reverse("api-submission-create"),
            "submit_url": reverse("upload-page", args=[benchmark.slug]),
            "row_groups": plugin.row_groups,
            "run_config_fields": [(name, RUN_CONFIG_HELP[name]) for name in RUN_CONFIG_FIELDS],
            "contamination_values": CONTAMINATION,
        },
    )


def _has_demo_writer(plugin) -> bool:
    return type(plugin).write_demo_runs is not BenchmarkPlugin.write_demo_runs


@require_safe
def benchmark_example_upload(request, slug: str):
    """The example upload as a download."""
    benchmark = get_object_or_404(Benchmark, slug=slug)
    plugin = get_plugin(benchmark.plugin)
    path = example_upload_path(plugin)
    if path is None:
        raise Http404("this benchmark has no example upload")
    name = f"{plugin.slug}-example{''.join(path.suffixes)}"
    return FileResponse(path.open("rb"), as_attachment=True, filename=name)
