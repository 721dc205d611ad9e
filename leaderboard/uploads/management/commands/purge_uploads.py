from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from leaderboard.uploads.services import uploads_expire


class Command(BaseCommand):
    help = "Delete the bytes of browser uploads left unfinished for a while (run it daily)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than-hours",
            type=float,
            default=48.0,
            help="Uploads untouched for this long are given up (default 48).",
        )

    def handle(self, *args, older_than_hours: float, **options):
        if older_than_hours <= 0:
            raise CommandError("--older-than-hours must be positive")
        count = uploads_expire(older_than=timedelta(hours=older_than_hours))
        self.stdout.write(f"{count} upload(s) expired")
