"""Demo data for `make demo`: an invented MP-Bench-format benchmark with audio that plays, a few
invented systems queued for scoring by the offline judge, and MP-Bench's paper Table 3."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.db import transaction

from evaluation import demo
from evaluation.models import Benchmark, Membership, Team
from evaluation.services import benchmark_import, reported_rows_load, submission_create

DEMO_SLUG = "mp-bench-demo"
# Local demo only: the embedded default is never served beyond 127.0.0.1.
DEMO_USER, DEMO_PASSWORD = "demo", "floorboard-demo"


class Command(BaseCommand):
    help = "Create the demo benchmark, queue the demo systems' bundles, preload the paper's table."

    def handle(self, *args, **options):
        work = Path(settings.VAR_DIR) / "demo"
        source = work / "benchmark"
        demo.write_demo_benchmark(source)
        summary = benchmark_import(
            slug=DEMO_SLUG,
            directory=source,
            name="MP-Bench format demo (synthetic conversations)",
            is_demo=True,
        )
        board = summary.benchmark
        if not board.description:
            board.description = (
                "Invented conversations and fictional systems; scored by the offline judge."
            )
            board.save(update_fields=["description"])

        with transaction.atomic():
            mpbench, _ = Benchmark.objects.get_or_create(
                slug="mp-bench", defaults={"name": "MP-Bench", "plugin": "mp-bench"}
            )
            loaded = reported_rows_load(benchmark=mpbench)
        self.stdout.write(f"MP-Bench: {loaded} paper rows added")

        self._demo_account()
        if board.submissions.exists():
            self.stdout.write(
                f"{DEMO_SLUG}: already seeded ({board.submissions.count()} submissions)"
            )
            return
        offline = board.judges.get(slug="offline")
        bundles = work / "bundles"
        bundles.mkdir(parents=True, exist_ok=True)
        for entry in demo.DEMO_SYSTEMS:
            path = bundles / f"{entry['profile']}.zip"
            demo.write_demo_bundle_zip(
                path,
                profile=entry["profile"],
                seed=entry["seed"],
                manifest=demo.system_manifest(entry),
            )
            submission = submission_create(
                benchmark=board,
                bundle_path=path,
                system_name=entry["name"],
                system_type=entry["system_type"],
                judge=offline,
                publish=True,
            )
            self.stdout.write(f"{DEMO_SLUG}: queued {entry['name']} as submission {submission.pk}")

    def _demo_account(self):
        """A local staff account in a team, so the demo shows uploads, judges and studies."""
        user, created = User.objects.get_or_create(
            username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        team, _ = Team.objects.get_or_create(slug="demo-lab", defaults={"name": "Demo Lab"})
        Membership.objects.get_or_create(
            team=team, user=user, defaults={"role": Membership.Role.OWNER}
        )
        self.stdout.write(f"demo login: {DEMO_USER} / {DEMO_PASSWORD} (staff, team Demo Lab)")
