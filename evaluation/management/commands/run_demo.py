"""`make demo`'s processes: the site (runserver) and a Celery worker with beat inside, the worker
watched and started again whenever it exits.

A worker that exits while the demo runs is reported on this console (its exit code or signal)
and started again after a short pause; one that has exited more than --max-restarts times within
RESTART_WINDOW seconds stops the demo with a message saying so, rather than leaving a site whose
uploads wait forever. The worker runs in a process group of its own, so that what it started
(the embedded beat) goes with it. Ctrl-C or SIGTERM stops everything.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.celery import worker_queues
from evaluation.demo_site import demo_environment

POLL_SECONDS = 0.2
RESTART_WINDOW = 600.0
# The pause before a worker is started again, doubled after each exit inside the window.
FIRST_PAUSE, MAX_PAUSE = 1.0, 30.0
STOP_SECONDS = 10.0  # a worker's warm shutdown, before it is killed


def worker_command() -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--pool=solo",
        # Judging and upload finishing alike; the broker takes from each queue in turn, so a
        # finish waits for the message in hand at most, not for the judging behind it.
        "-Q",
        ",".join(worker_queues()),
        "-B",
        "-s",
        str(settings.VAR_DIR / "celerybeat-schedule"),
        "--loglevel=WARNING",
    ]


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the process's group (a warm shutdown), SIGKILL to what is left after
    STOP_SECONDS. A group whose leader already died may still hold its children."""
    for sent, wait in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            process.poll()
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
    process.poll()


class Command(BaseCommand):
    help = "Serve the site and run a Celery worker (beat inside) that is started again if it exits."

    def add_arguments(self, parser):
        parser.add_argument("address", nargs="?", default="127.0.0.1:8000", help="HOST:PORT")
        parser.add_argument(
            "--max-restarts",
            type=int,
            default=5,
            help=f"worker exits tolerated within {RESTART_WINDOW:.0f} s before the demo stops",
        )
        parser.add_argument(
            "--no-server", action="store_true", help="run the worker only, no web server"
        )

    def handle(self, *args, address, max_restarts, no_server, **options):
        self.stopping = False
        for caught in (signal.SIGINT, signal.SIGTERM):
            signal.signal(caught, self._stop)
        # The site and the worker (whose notices link to the site) learn where the demo is
        # reached, and the site accepts this machine's names when it serves every interface.
        try:
            os.environ.update(demo_environment(address, os.environ))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        server = None
        if not no_server:
            self.stdout.write(
                f"Floorboard demo on {os.environ['FLOORBOARD_SITE_URL'].rstrip('/')}/ "
                "(Ctrl-C stops the site and the worker)"
            )
            server = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", "--noreload", address],
                cwd=settings.BASE_DIR,
            )
        worker = self._start_worker()
        exits: deque[float] = deque()
        try:
            while not self.stopping:
                time.sleep(POLL_SECONDS)
                if server is not None and server.poll() is not None:
                    raise CommandError(
                        f"the web server stopped ({describe_exit(server.returncode)})"
                    )
                if worker.poll() is None:
                    continue
                how = describe_exit(worker.returncode)
                # Whatever the dead worker started (its beat) goes with it.
                stop_group(worker)
                now = time.monotonic()
                exits.append(now)
                while exits and now - exits[0] > RESTART_WINDOW:
                    exits.popleft()
                if len(exits) > max_restarts:
                    raise CommandError(
                        f"the demo's worker exited {len(exits)} times within "
                        f"{RESTART_WINDOW / 60:.0f} minutes (the last: {how}); stopping the demo. "
                        "Its log is above; run `make demo` again once the cause is fixed."
                    )
                pause = min(MAX_PAUSE, FIRST_PAUSE * 2 ** (len(exits) - 1))
                self.stderr.write(
                    f"floorboard: the worker (pid {worker.pid}) stopped: {how}. Starting it "
                    f"again in {pause:.0f} s (restart {len(exits)} of at most {max_restarts} "
                    f"within {RESTART_WINDOW / 60:.0f} minutes); queued work resumes."
                )
                deadline = time.monotonic() + pause
                while not self.stopping and time.monotonic() < deadline:
                    time.sleep(POLL_SECONDS)
                if not self.stopping:
                    worker = self._start_worker()
        finally:
            stop_group(worker)
            if server is not None and server.poll() is None:
                server.terminate()
                try:
                    server.wait(STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    server.kill()

    def _start_worker(self) -> subprocess.Popen:
        worker = subprocess.Popen(worker_command(), cwd=settings.BASE_DIR, start_new_session=True)
        self.stdout.write(f"floorboard: worker started (pid {worker.pid})")
        self.stdout.flush()
        return worker

    def _stop(self, signum, frame) -> None:
        self.stopping = True
