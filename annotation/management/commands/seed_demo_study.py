"""The demo rating study (also run by seed_demo): a study on the demo benchmark with invite
links and simulated ratings."""

from django.core.management.base import BaseCommand

from annotation.demo import seed_demo_study


class Command(BaseCommand):
    help = "Create the demo rating study on the first demo board and print its invite links."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, **options):
        seed_demo_study(base_url=options["base_url"].rstrip("/"), stdout=self.stdout)
