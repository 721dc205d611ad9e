from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.benchmarks import registry
from evaluation.benchmarks.base import SourceError
from evaluation.services import benchmark_import


class Command(BaseCommand):
    help = "Import (or re-import) a benchmark's tasks, judge prompts and files from its release."

    def add_arguments(self, parser):
        plugins = registry()
        parser.add_argument("plugin", choices=list(plugins), help="benchmark plug-in")
        parser.add_argument("directory", type=Path, help="the benchmark's release or checkout")
        parser.add_argument("--slug", help="board slug (default: the plug-in's)")
        parser.add_argument("--name", help="display name (default: the plug-in's)")
        parser.add_argument("--demo", action="store_true", help="mark as demo data")
        seen = set()
        for plugin in plugins.values():
            for option in plugin.import_options:
                if option.name not in seen:
                    seen.add(option.name)
                    parser.add_argument(
                        f"--{option.name}", dest=f"option_{option.name}", help=option.help
                    )

    def handle(self, *args, plugin, directory, slug, name, demo, **options):
        chosen = registry()[plugin]
        if not directory.exists():
            raise CommandError(f"{directory}: no such file or directory")
        given = {}
        for option in chosen.import_options:
            value = options.get(f"option_{option.name}")
            if value is None and option.required:
                raise CommandError(f"{plugin} needs --{option.name}: {option.help}")
            if value is not None:
                given[option.name] = value
        try:
            summary = benchmark_import(
                slug=slug or plugin,
                directory=directory,
                plugin=plugin,
                name=name or "",
                is_demo=demo,
                options=given,
            )
        except SourceError as exc:
            raise CommandError(str(exc)) from None
        benchmark = summary.benchmark
        self.stdout.write(
            f"{benchmark.slug}: {benchmark.tasks.count()} tasks "
            f"({summary.tasks_created} new, {summary.tasks_updated} changed); "
            f"new prompt versions: {', '.join(summary.prompts_added) or 'none'}"
            + (f"; {summary.assets_stored} files stored" if summary.assets_stored else "")
        )
