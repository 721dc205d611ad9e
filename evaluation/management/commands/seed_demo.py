"""Demo data for `make demo`: for every benchmark plug-in, an invented benchmark in its format
with audio that plays, invented systems queued for scoring by the offline judge, and the rows
its paper reports on the benchmark's own (empty) board."""

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluation.benchmarks import registry
from evaluation.models import Benchmark, Membership, Team
from evaluation.services import benchmark_import, reported_rows_load, submission_create

DEMO_USER = "demo"


def demo_slug(plugin) -> str:
    return f"{plugin.slug}-demo"


class Command(BaseCommand):
    help = "Create each benchmark's demo board, queue its demo systems, preload its paper rows."

    def handle(self, *args, **options):
        if not settings.DEBUG:
            # Its staff account and fictional boards have no place on a served site.
            raise CommandError(
                "seed_demo makes a local demo (a staff account, fictional boards) and runs only "
                "with DEBUG on: set DJANGO_DEBUG=1, as `make demo` does, on a local copy"
            )
        self._demo_account()
        for plugin in registry().values():
            self._seed(plugin)

    def _seed(self, plugin):
        work = Path(settings.VAR_DIR) / "demo" / plugin.slug
        source = work / "benchmark"
        try:
            plugin.write_demo_source(source)
        except NotImplementedError:
            self.stdout.write(f"{plugin.name}: no demo data")
            return
        slug = demo_slug(plugin)
        summary = benchmark_import(
            slug=slug,
            directory=source,
            plugin=plugin.slug,
            name=f"{plugin.name} format demo (synthetic)",
            is_demo=True,
        )
        board = summary.benchmark
        description = "Invented tasks and fictional systems; scored by the offline judge."
        if board.description != description:
            board.description = description
            board.save(update_fields=["description"])

        with transaction.atomic():
            real, _ = Benchmark.objects.get_or_create(
                slug=plugin.slug,
                defaults={
                    "name": plugin.name,
                    "plugin": plugin.slug,
                    "description": plugin.description,
                },
            )
            loaded = reported_rows_load(benchmark=real)
        self.stdout.write(f"{plugin.name}: {loaded} paper rows added")

        if board.submissions.exists():
            self.stdout.write(f"{slug}: already seeded ({board.submissions.count()} submissions)")
            return
        offline = board.judges.get(slug="offline")
        for run in plugin.write_demo_runs(work / "uploads"):
            submission = submission_create(
                benchmark=board,
                bundle_path=run.path,
                system_name=run.system,
                row_group=run.row_group,
                judge=offline,
                publish=True,
                options=dict(run.options),
            )
            self.stdout.write(f"{slug}: queued {run.system} as submission {submission.pk}")
        self.stdout.write(f"{slug}: demo uploads are in {work / 'uploads'}")

    def _demo_account(self):
        """A local staff account in a team, so the demo shows uploads, judges and studies. Its
        password is new on every run, printed here and nowhere else."""
        user, _ = User.objects.get_or_create(
            username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True}
        )
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save(update_fields=["password"])
        team, _ = Team.objects.get_or_create(slug="demo-lab", defaults={"name": "Demo Lab"})
        Membership.objects.get_or_create(
            team=team, user=user, defaults={"role": Membership.Role.OWNER}
        )
        self.stdout.write(f"demo login: {DEMO_USER} / {password} (staff, team Demo Lab)")
