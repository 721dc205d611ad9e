from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Submission
from evaluation.services import failed_judgments_retry


class Command(BaseCommand):
    help = "Retry just the failed judgments of a submission, then re-aggregate."

    def add_arguments(self, parser):
        parser.add_argument("submission", type=int)

    def handle(self, *args, submission, **options):
        item = (
            Submission.objects.select_related("judge")
            .filter(pk=submission, is_reported=False)
            .first()
        )
        if item is None:
            raise CommandError(f"no submission {submission}")
        count = failed_judgments_retry(submission=item)
        self.stdout.write(f"submission {item.pk}: {count} failed judgment(s) queued again")
