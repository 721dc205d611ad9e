"""The demo rating study (also run by seed_demo): a study on the demo benchmark with invite
links and simulated ratings."""

from django.core.management.base import BaseCommand

from annotation.demo import seed_demo_study
from evaluation.demo_site import reachable_url


class Command(BaseCommand):
    help = "Create the demo rating study on the first demo board and print its invite links."

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="the site's address for the invite links; a server on every interface "
            "(http://0.0.0.0:PORT) is named by this machine's address",
        )

    def handle(self, *args, **options):
        base_url = reachable_url(options["base_url"]).rstrip("/")
        seed_demo_study(base_url=base_url, stdout=self.stdout)
