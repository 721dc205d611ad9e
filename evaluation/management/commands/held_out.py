from django.core.management.base import BaseCommand, CommandError

from evaluation.held_out import held_out_ids
from evaluation.models import Benchmark
from evaluation.services.held_out import HeldOutError, held_out_mark


class Command(BaseCommand):
    help = (
        "Mark a benchmark's tasks as held out (by id, or a seeded random fraction), or list "
        "them. Their ground truth, prompts and per-task results are then shown to staff only, "
        "and every score is aggregated again with the held-out tasks apart (no judge call)."
    )

    def add_arguments(self, parser):
        parser.add_argument("benchmark", help="the benchmark's slug")
        parser.add_argument("--tasks", nargs="+", help="task ids to hold out")
        parser.add_argument("--fraction", type=float, help="hold out this share of the tasks")
        parser.add_argument("--seed", type=int, help="seed of the random choice (required)")
        parser.add_argument("--clear", action="store_true", help="unmark every task first")
        parser.add_argument(
            "--list", dest="only_list", action="store_true", help="only list the held-out tasks"
        )

    def handle(self, *args, benchmark, tasks, fraction, seed, clear, only_list, **options):
        found = Benchmark.objects.filter(slug=benchmark).first()
        if found is None:
            raise CommandError(f"no benchmark {benchmark!r}")
        if only_list:
            for task_id in sorted(held_out_ids(benchmark=found)):
                self.stdout.write(task_id)
            return
        if tasks is None and fraction is None and not clear:
            raise CommandError("give --tasks, --fraction with --seed, --clear or --list")
        try:
            held = held_out_mark(
                benchmark=found, task_ids=tasks, fraction=fraction, seed=seed, clear=clear
            )
        except HeldOutError as problem:
            raise CommandError(str(problem)) from None
        total = found.tasks.count()
        self.stdout.write(f"{len(held)} of {total} tasks of {found.slug} are held out")
