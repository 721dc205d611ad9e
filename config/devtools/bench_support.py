"""Helpers the benchmark figure commands share: a local judge in a process of its own, timing a
function at its fastest with its peak memory, timing the judge work, and running the
pipeline's stages by hand (no queue), each timed, and another process's processor time."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
import tracemalloc
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from evaluation import services
from evaluation.benchmarks import get_plugin
from evaluation.judge_endpoints import host_allowed
from evaluation.models import Submission
from evaluation.services import judging, pipeline, submissions


class _Handler(BaseHTTPRequestHandler):
    """Answers a chat completion with answer(its last message) after ``delay`` seconds; a
    message answer() does not know (None) gets an answer without a verdict, counted. Connections
    are kept open, as a provider's are, and replies are sent at once (no Nagle delay)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    delay = 0.0
    answer: Callable[[str], str | None] = staticmethod(lambda content: None)
    requests = None  # counters shared with the measuring process
    unknown = None

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with self.requests.get_lock():
            self.requests.value += 1
        content = self.answer(body["messages"][-1]["content"])
        if content is None:
            with self.unknown.get_lock():
                self.unknown.value += 1
            content = "an unknown request"
        if self.delay:
            time.sleep(self.delay)
        raw = json.dumps(
            {
                "choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def _serve(delay: float, answer, requests, unknown, ports) -> None:
    _Handler.delay, _Handler.answer = delay, staticmethod(answer)
    _Handler.requests, _Handler.unknown = requests, unknown
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    ports.put(server.server_address[1])
    server.serve_forever()


LOCAL_HOST = "127.0.0.1"


def local_judges_allowed() -> dict[str, str]:
    """Let this process's judges call the local judge servers (on loopback), which the site's
    judge hosts need not allow; returns what the environment of a worker process it starts
    needs for the same."""
    if not host_allowed(LOCAL_HOST, settings.JUDGE_HOSTS):
        settings.JUDGE_HOSTS = [*settings.JUDGE_HOSTS, LOCAL_HOST]
    return {"FLOORBOARD_JUDGE_HOSTS": ",".join(settings.JUDGE_HOSTS)}


class JudgeServer:
    """A local OpenAI-compatible judge in a process of its own, as a remote judge would be: its
    work takes nothing from the process being measured. ``answer(last message)`` gives the
    reply's content (None for a message it does not know). This process's judges may call it
    (local_judges_allowed)."""

    def __init__(self, delay: float, answer: Callable[[str], str | None]):
        local_judges_allowed()
        context = multiprocessing.get_context("fork")  # answer() need not be picklable
        self.requests = context.Value("i", 0)
        self.unknown = context.Value("i", 0)
        ports = context.Queue()
        self.process = context.Process(
            target=_serve,
            args=(delay, answer, self.requests, self.unknown, ports),
            daemon=True,
        )
        self.process.start()
        self.url = f"http://{LOCAL_HOST}:{ports.get(timeout=30)}/v1"

    @property
    def calls(self) -> int:
        return self.requests.value

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(10)


def measure(function, repeat: int):
    """(result, the fastest wall seconds of ``repeat`` runs, the peak traced memory of one more
    run): the fastest run is the one least disturbed by whatever else the machine does."""
    walls = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        walls.append(time.perf_counter() - started)
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, min(walls), peak


@contextmanager
def timed_judging(store: list):
    """Adds the wall time of every judgments_work call made inside the block to ``store``."""
    original = judging.judgments_work

    def wrapped(**kwargs):
        started = time.perf_counter()
        try:
            return original(**kwargs)
        finally:
            store.append(time.perf_counter() - started)

    judging.judgments_work = wrapped
    try:
        yield
    finally:
        judging.judgments_work = original


@contextmanager
def stages_by_hand():
    """The pipeline's stages queue their successors; here each is called in turn instead."""
    saved = (pipeline.enqueue_on_commit, submissions.enqueue_on_commit, pipeline.after_commit)
    pipeline.enqueue_on_commit = submissions.enqueue_on_commit = lambda *args: None
    pipeline.after_commit = lambda callback: None
    try:
        yield
    finally:
        pipeline.enqueue_on_commit, submissions.enqueue_on_commit, pipeline.after_commit = saved


@dataclass
class StagedRun:
    submission: Submission | None = None  # set once the run is scored
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds
    # stage -> its own peak traced memory, when the run is traced (measure()'s last run). Each
    # stage restarts tracemalloc's peak: the run's peak is the highest of these, not the one
    # measure() reads at its end.
    peaks: dict[str, int] = field(default_factory=dict)

    @property
    def peak(self) -> int:
        return max(self.peaks.values(), default=0)


def staged_run(
    benchmark, upload, judge, name: str, *, options: dict, steps_label: str = "steps"
) -> StagedRun:
    """One upload through every stage, called in turn as a worker would run them, each timed:
    validate, store, ingest, the processing steps (``steps_label``), linking judgments, then
    the calls and aggregation ("judge and aggregate") or, every answer stored, "aggregate"."""
    run = StagedRun()
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        run.seconds[stage] = now - clock
        clock = now
        if tracemalloc.is_tracing():
            run.peaks[stage] = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()

    with stages_by_hand():
        report, contents = services.bundle_validate(
            benchmark=benchmark, path=upload, allow_partial=False, options=dict(options)
        )
        if not report.ok:
            raise CommandError(f"the synthetic upload does not validate: {report.problems[:3]}")
        lap("validate")
        submission = services.submission_create(
            benchmark=benchmark,
            bundle_path=upload,
            system_name=name,
            judge=judge,
            options=dict(options),
            validated=contents,
        )
        # A worker validates, stores and lets go: nothing of the upload is held past here.
        del report, contents
        lap("store")
        pipeline.submission_ingest(submission_id=submission.pk)
        lap("ingest")
        steps = get_plugin(benchmark.plugin).steps
        for index in range(len(steps)):
            pipeline.step_run(submission_id=submission.pk, index=index)
        if steps:
            lap(steps_label)
        Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.JUDGING)
        submission.refresh_from_db()
        calls = judging.judgments_prepare(submission=submission, judge=judge)
        lap("link judgments")
        if calls:
            pipeline.judge_run(submission_id=submission.pk, judge_id=judge.pk)
            lap("judge and aggregate")
        else:
            pipeline.judging_finish(submission_id=submission.pk, judge_id=judge.pk)
            lap("aggregate")
    submission.refresh_from_db()
    if submission.status != Submission.Status.SCORED:
        raise CommandError(f"{name}: {submission.status} {submission.error}")
    run.submission = submission
    return run


def differences(expected, found) -> list[str]:
    """Where two JSON values differ, as "path: expected != found", one line per leaf that does
    (a key only one of them has is one leaf). Compared as stored: a tuple is a list."""
    return _differences(json.loads(json.dumps(expected)), json.loads(json.dumps(found)), "")


def _differences(expected, found, path: str) -> list[str]:
    if isinstance(expected, dict) and isinstance(found, dict):
        named = []
        for key in sorted(expected.keys() | found.keys()):
            where = f"{path}.{key}" if path else key
            if key not in found:
                named.append(f"{where}: {expected[key]!r} != (missing)")
            elif key not in expected:
                named.append(f"{where}: (missing) != {found[key]!r}")
            else:
                named.extend(_differences(expected[key], found[key], where))
        return named
    if isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        return [
            named
            for index, pair in enumerate(zip(expected, found, strict=True))
            for named in _differences(*pair, f"{path}[{index}]")
        ]
    # True == 1 in Python; not in a table of results.
    same = expected == found and (type(expected) is bool) == (type(found) is bool)
    return [] if same else [f"{path or '(the whole value)'}: {expected!r} != {found!r}"]


def process_cpu_seconds(pid: int, *, main_thread: bool = False) -> float | None:
    """The processor seconds (user and system) another process has spent so far, all its threads
    together, or with ``main_thread`` its main thread's alone, as Linux's /proc tells; None
    where there is no /proc to read."""
    # The main thread's id is the process's.
    where = f"/proc/{pid}/task/{pid}/stat" if main_thread else f"/proc/{pid}/stat"
    try:
        stat = Path(where).read_text()
    except OSError:
        return None
    # After the command name, in parentheses (which may hold spaces): utime and stime are the
    # 12th and 13th fields.
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
