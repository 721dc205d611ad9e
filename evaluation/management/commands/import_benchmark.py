from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.benchmarks import PLUGINS, get_plugin
from evaluation.services import benchmark_import

NAMES = {"mp-bench": "MP-Bench"}


class Command(BaseCommand):
    help = "Import (or re-import) a benchmark's tasks and judge prompts from its checkout."

    def add_arguments(self, parser):
        parser.add_argument("plugin", choices=sorted(PLUGINS), help="benchmark plug-in")
        parser.add_argument("directory", type=Path, help="checkout of the benchmark repository")
        parser.add_argument("--slug", help="board slug (default: the plug-in name)")
        parser.add_argument("--name", help="display name")
        parser.add_argument("--demo", action="store_true", help="mark as demo data")

    def handle(self, *args, plugin, directory, slug, name, demo, **options):
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a directory")
        try:
            summary = benchmark_import(
                slug=slug or plugin,
                directory=directory,
                plugin=plugin,
                name=name or NAMES.get(plugin, plugin),
                is_demo=demo,
            )
        except get_plugin(plugin).SourceError as exc:
            raise CommandError(str(exc)) from None
        benchmark = summary.benchmark
        self.stdout.write(
            f"{benchmark.slug}: {benchmark.tasks.count()} tasks "
            f"({summary.tasks_created} new, {summary.tasks_updated} changed); "
            f"new prompt versions: {', '.join(summary.prompts_added) or 'none'}"
        )
