from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Benchmark, Submission
from evaluation.services import submission_rescore


class Command(BaseCommand):
    help = "Re-run judging and aggregation (cached judgments make no call) for one submission or a benchmark."

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--submission", type=int)
        target.add_argument("--benchmark")
        parser.add_argument("--judge", help="judge slug (default: each submission's own judge)")

    def handle(self, *args, submission, benchmark, judge, **options):
        if submission is not None:
            submissions = Submission.objects.filter(pk=submission, is_reported=False)
            if not submissions.exists():
                raise CommandError(f"no submission {submission}")
            if not submissions.filter(task_results__detected=True).exists():
                raise CommandError(f"submission {submission} has not been processed yet")
        else:
            board = Benchmark.objects.filter(slug=benchmark).first()
            if board is None:
                raise CommandError(f"unknown benchmark {benchmark!r}")
            # Only submissions whose processing has run: judging needs its output.
            submissions = board.submissions.filter(
                is_reported=False, task_results__detected=True
            ).distinct()
        count = 0
        for item in submissions.select_related("benchmark", "judge"):
            chosen = item.judge
            if judge:
                chosen = item.benchmark.judges.filter(slug=judge).first()
                if chosen is None:
                    raise CommandError(f"benchmark {item.benchmark.slug} has no judge {judge!r}")
            submission_rescore(submission=item, judge=chosen)
            count += 1
        self.stdout.write(f"queued {count} submission(s) for re-scoring")
