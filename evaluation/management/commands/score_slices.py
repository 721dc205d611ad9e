from django.core.management.base import BaseCommand
from django.db import transaction

from evaluation.benchmarks import get_plugin
from evaluation.models import Score
from evaluation.services.pipeline import score_slices, task_outcomes
from evaluation.slices import slices_version


class Command(BaseCommand):
    help = (
        "Store per-task contributions and slice results on scores that lack them or were made "
        "under other slice declarations (after an upgrade or a plug-in's new slices). Reads "
        "stored detections and judgments only: no judge is called and no result changes."
    )

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", help="only this benchmark's slug")
        parser.add_argument("--all", action="store_true", help="recompute even current ones")

    def handle(self, *args, benchmark=None, all=False, **options):
        scores = Score.objects.select_related("submission__benchmark", "judge").order_by("pk")
        if benchmark:
            scores = scores.filter(submission__benchmark__slug=benchmark)
        done = skipped = 0
        for score in scores.iterator(chunk_size=50):
            submission = score.submission
            plugin = get_plugin(submission.benchmark.plugin)
            current = (score.slices or {}).get("version") == slices_version(plugin)
            if current and not all:
                skipped += 1
                continue
            outcomes, _, _ = task_outcomes(submission=submission, judge=score.judge)
            contributions, slices = score_slices(plugin, outcomes, submission.facts)
            with transaction.atomic():
                # Only these two fields: the results and computed_at stay as they are, so
                # cached boards and comparisons stay valid.
                Score.objects.filter(pk=score.pk).update(contributions=contributions, slices=slices)
            done += 1
        self.stdout.write(f"{done} score(s) updated, {skipped} already current")
