import json
import logging
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.benchmarks import get_plugin
from evaluation.bundles import BundleRejected, zip_directory
from evaluation.models import Benchmark, Submission, Team
from evaluation.selectors import submission_summary, workers_silent
from evaluation.services import SubmissionInvalid, submission_create

logger = logging.getLogger(__name__)
FINAL = {Submission.Status.SCORED, Submission.Status.FAILED}


class Command(BaseCommand):
    help = "Validate an upload (a file, or a directory that is zipped) and queue it for scoring."

    def add_arguments(self, parser):
        parser.add_argument("bundle", type=Path, help="the upload: a file, or a directory")
        parser.add_argument("--benchmark", required=True)
        parser.add_argument("--system", required=True, help="system name shown on the board")
        parser.add_argument(
            "--system-type",
            default="",
            help="the board's row group (the benchmark's system types, e.g. realtime)",
        )
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a choice the benchmark asks for with an upload, e.g. mode=full-duplex",
        )
        parser.add_argument(
            "--judge", default="official", help="judge slug: official, offline, ..."
        )
        parser.add_argument(
            "--allow-partial", action="store_true", help="accept missing tasks; marked incomplete"
        )
        parser.add_argument(
            "--team", help="owning team's slug (its members see it before it is published)"
        )
        parser.add_argument("--publish", action="store_true", help="show it publicly once scored")
        parser.add_argument("--wait", action="store_true", help="wait until scored or failed")
        parser.add_argument(
            "--timeout", type=float, default=6 * 3600, help="seconds to wait at most"
        )
        parser.add_argument(
            "--run-config",
            type=Path,
            metavar="FILE",
            help="the run configuration as a JSON file (README: Run configuration); "
            "replaces the manifest's run_config",
        )
        parser.add_argument(
            "--contamination",
            choices=["no", "yes", "unknown"],
            help="did the system see this benchmark's data in training or tuning",
        )
        parser.add_argument("--contamination-note", help="what it saw, and how")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(
        self,
        *args,
        bundle,
        benchmark,
        system,
        system_type,
        option,
        judge,
        allow_partial,
        team,
        publish,
        wait,
        timeout,
        as_json,
        run_config=None,
        contamination=None,
        contamination_note=None,
        **options,
    ):
        board = Benchmark.objects.filter(slug=benchmark).first()
        if board is None:
            raise CommandError(
                f"unknown benchmark {benchmark!r}; import it first with import_benchmark"
            )
        chosen = board.judges.filter(slug=judge).first()
        if chosen is None:
            known = ", ".join(board.judges.values_list("slug", flat=True))
            raise CommandError(f"benchmark {benchmark} has no judge {judge!r}; known: {known}")
        owner = None
        if team:
            owner = Team.objects.filter(slug=team).first()
            if owner is None:
                raise CommandError(f"unknown team {team!r}")
        if not bundle.exists():
            raise CommandError(f"{bundle}: no such file or directory")
        options = {}
        for item in option:
            name, equals, value = item.partition("=")
            if not equals:
                raise CommandError(f"--option {item!r}: write it as NAME=VALUE")
            options[name] = value
        config = _read_run_config(run_config) if run_config is not None else None
        plugin = get_plugin(board.plugin)
        if bundle.is_dir() and not plugin.upload.directories_are_zipped:
            raise CommandError(f"{board.name} takes {plugin.upload.label}, not a directory")

        temporary = zip_directory(bundle) if bundle.is_dir() else None
        try:
            submission = submission_create(
                benchmark=board,
                bundle_path=temporary or bundle,
                system_name=system,
                row_group=system_type,
                judge=chosen,
                allow_partial=allow_partial,
                team=owner,
                publish=publish,
                options=options,
                run_config=config,
                contamination=contamination,
                contamination_note=contamination_note,
            )
        except BundleRejected as exc:
            if as_json:
                self.stdout.write(
                    json.dumps({"submission": None, "status": "rejected", **exc.report.as_dict()})
                )
            raise CommandError(str(exc)) from None
        except SubmissionInvalid as exc:
            raise CommandError(str(exc)) from None
        except Exception:
            # The traceback is for whoever runs with FLOORBOARD_LOG_LEVEL=DEBUG, not the output.
            logger.debug("submit failed", exc_info=True)
            raise CommandError(
                "could not create the submission: an unexpected error, nothing was stored "
                "(run with FLOORBOARD_LOG_LEVEL=DEBUG for the details)"
            ) from None
        finally:
            if temporary:
                temporary.unlink(missing_ok=True)

        if wait:
            _wait_for(submission, timeout)
        summary = submission_summary(submission=submission)
        if as_json:
            self.stdout.write(json.dumps(summary))
        else:
            self.stdout.write(f"submission {submission.pk}: {summary['status']}")
            for row in summary["metrics"]:
                self.stdout.write(_metric_line(row))
        if wait and submission.status == Submission.Status.FAILED:
            raise CommandError(f"submission {submission.pk} failed: {submission.error}")
        if wait and submission.status not in FINAL:
            raise CommandError(
                f"submission {submission.pk} still {submission.status} after {timeout:.0f} s"
            )


def _wait_for(submission: Submission, timeout: float) -> None:
    """Until the submission is final or ``timeout`` passes; fails at once when no worker has
    been seen for WORKER_SILENT_SECONDS (one that was never seen gets that long from now to
    start). A long queue with live workers is waited for."""
    started = time.monotonic()
    deadline = started + timeout
    while submission.status not in FINAL and time.monotonic() < deadline:
        silent = workers_silent()
        if silent is not None and (
            silent["seen_at"] is not None
            or time.monotonic() - started >= settings.WORKER_SILENT_SECONDS
        ):
            since = (
                f"none has been seen for {silent['seconds']} s"
                if silent["seen_at"] is not None
                else f"none has been seen in {time.monotonic() - started:.0f} s of waiting"
            )
            raise CommandError(
                f"submission {submission.pk} is {submission.status}: no worker is running "
                f"({since}): start one with `celery -A config worker` (`make demo` starts "
                "its own); nothing stored is lost, and the submission goes on once one runs"
            )
        time.sleep(0.5)
        submission.refresh_from_db()


def _metric_line(row: dict) -> str:
    """One metric as `[split] label: value (count/total) [low, high]`."""
    value = "–" if row["value"] is None else f"{row['value']:g}{row['unit'] or ''}"
    counts = f" ({row['count']}/{row['total']})" if row["count"] is not None else ""
    interval = f" [{row['interval'][0]:g}, {row['interval'][1]:g}]" if row["interval"] else ""
    split = f"[{row['split']}] " if row["split"] else ""
    return f"{split}{row['label']}: {value}{counts}{interval}"


def _read_run_config(path: Path) -> dict:
    if not path.is_file():
        raise CommandError(f"--run-config {path}: no such file")
    if path.stat().st_size > 1024 * 1024:
        raise CommandError(f"--run-config {path}: larger than 1 MB; a run configuration is small")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CommandError(f"--run-config {path}: not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise CommandError(f"--run-config {path}: expected a JSON object")
    return config
