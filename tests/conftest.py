"""Shared fixtures: the example plug-in as the core's benchmark, the real MP-Bench data beside
the checkout (for MP-Bench's own tests), a local judge server speaking the
OpenAI chat-completions API, bundle builders, and the services a test may require."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import pickle
import shutil
import socket
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Python's cyclic garbage collector in the test processes. A test process holds many long-lived
# objects (every collected test, Django's models, each plug-in's declarations) that the default
# thresholds, (700, 10, 10), have the collector walk thousands of times a run; collecting less
# often takes about a twentieth of the quick tier's processor time off. The product's processes,
# and the processes tests start, keep the defaults, and memory is measured under them
# (peak_rss_growth).
PRODUCT_GC_THRESHOLDS = gc.get_threshold()
TEST_GC_THRESHOLDS = (50_000, 50, 100)


def shared_places(folder: str) -> list[Path]:
    """Where shared/benchmarks/<folder> (a benchmark's released texts) is looked for: under
    $FLOORBOARD_SHARED if set, else in shared/ beside the checkout, then in shared/ beside the
    folder of worktrees that holds it."""
    if os.environ.get("FLOORBOARD_SHARED"):
        bases = [Path(os.environ["FLOORBOARD_SHARED"])]
    else:
        bases = [REPO.parent / "shared", REPO.parent.parent / "shared"]
    return [base / "benchmarks" / folder for base in bases]


def shared_benchmark(folder: str) -> Path:
    """The first of shared_places(folder) that exists (the first of them if none does)."""
    places = shared_places(folder)
    return next((place for place in places if place.is_dir()), places[0])


def require_shared(folder: str, *names: str, what: str) -> Path:
    """shared/benchmarks/<folder> holding every one of ``names``; else the test skips, saying
    what it reads, which files are missing and where they were looked for."""
    found = shared_benchmark(folder)
    missing = [name for name in names if not (found / name).is_file()]
    if missing:
        looked = " or ".join(str(place) for place in shared_places(folder))
        pytest.skip(
            f"reads {what}: {', '.join(missing)} not found in {looked} "
            "(FLOORBOARD_SHARED names the folder holding benchmarks/)"
        )
    return found


SHARED_MPBENCH = shared_benchmark("mpbench")
REQUIRE_SERVICES = os.environ.get("FLOORBOARD_REQUIRE_SERVICES") == "1"
# The services tier (PostgreSQL, Redis, worker processes, SIGKILL runs, headless Chromium) runs
# in CI, or with FLOORBOARD_RUN_SERVICES=1; plain `make test` is the quick tier.
RUN_SERVICES = REQUIRE_SERVICES or os.environ.get("FLOORBOARD_RUN_SERVICES") == "1"
# How often a test's HTTP server looks for its shutdown (serve_forever's default, half a second,
# is what every test stopping one would wait).
SERVE_POLL = 0.02


def pytest_configure(config):
    if RUN_SERVICES and os.environ.get("PYTEST_XDIST_WORKER"):
        # Worker processes started by tests share one broker database and queue.
        pytest.exit("the services tier runs in one process: drop -n (make test does)", 2)
    gc.set_threshold(*TEST_GC_THRESHOLDS)


def pytest_collection_modifyitems(config, items):
    if RUN_SERVICES:
        return
    skip = pytest.mark.skip(
        reason="services tier: set FLOORBOARD_RUN_SERVICES=1 (CI runs it, through .ci/run)"
    )
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "services" in item.keywords or {"browser", "module_browser"} & fixtures:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def mpbench_dir() -> Path:
    return require_shared("mpbench", "tasks.jsonl", what="MP-Bench's released data")


@pytest.fixture(scope="session")
def mpbench_tasks(mpbench_dir) -> dict[str, dict]:
    with (mpbench_dir / "tasks.jsonl").open() as handle:
        return {t["task_dir"]: t for t in map(json.loads, handle)}


def import_mpbench(directory: Path):
    from evaluation.services import benchmark_import

    return benchmark_import(
        slug="mp-bench", directory=directory, plugin="mp-bench", name="MP-Bench"
    ).benchmark


@pytest.fixture
def mpbench(request, db, mpbench_dir):
    if "shared_db" in request.fixturenames:
        return fresh(request.getfixturevalue("shared_mpbench"))  # imported once for the module
    return import_mpbench(mpbench_dir)


@pytest.fixture(scope="module")
def shared_mpbench(shared_db, mpbench_dir):
    """MP-Bench imported once for a module whose tests share rows (see shared_db)."""
    return import_mpbench(mpbench_dir)


# --- The example plug-in: the benchmark of core tests ----------------------------------------


@pytest.fixture
def toybench(db, settings, tmp_path):
    """The example plug-in (tests/toyplugin: six questions, two grades each) registered and its
    release imported as "toy-bench": the benchmark a core test runs on when any will do, made
    here with nothing beside the checkout."""
    from evaluation.services import benchmark_import
    from tests.toyplugin import toy

    settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    toy.write_release(tmp_path / "toy-release")
    return benchmark_import(
        slug="toy-bench", directory=tmp_path / "toy-release", plugin="toy-bench", name="Toy-Bench"
    ).benchmark


@pytest.fixture(scope="module")
def shared_toybench(shared_db, tmp_path_factory):
    """toybench imported once for a module whose tests share rows (see shared_db); the example
    plug-in stays registered while the module runs."""
    from django.conf import settings
    from django.test import override_settings

    from evaluation.services import benchmark_import
    from tests.toyplugin import toy

    release = tmp_path_factory.mktemp("toy-release")
    toy.write_release(release)
    with override_settings(
        FLOORBOARD_BENCHMARKS=[*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    ):
        yield benchmark_import(
            slug="toy-bench", directory=release, plugin="toy-bench", name="Toy-Bench"
        ).benchmark


def toy_upload(path: Path, manifest: dict | None = None) -> Path:
    """A zip for toybench answering its first three tasks (two of them right), each answer
    spoken beside it, and missing the other three; with ``manifest`` as its manifest.json."""
    from tests.toyplugin import toy

    toy.write_spoken_answers(path, correct=2, skip=3)
    if manifest is not None:
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("manifest.json", json.dumps(manifest))
    return path


@pytest.fixture
def toy_partial(tmp_path) -> Path:
    """toy_upload without a manifest, as examples_bundle is for MP-Bench."""
    return toy_upload(tmp_path / "partial.zip")


@pytest.fixture
def eager():
    """Celery runs each queued task inline, as soon as the transaction commits."""
    from config.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def postgres():
    """For tests that need PostgreSQL itself (row locks, a worker sharing the database)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        if REQUIRE_SERVICES:
            pytest.fail("FLOORBOARD_REQUIRE_SERVICES=1 but the test database is not PostgreSQL")
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")


def media_storages(location: Path) -> dict:
    from django.conf import settings

    return {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(location), "allow_overwrite": True},
        },
    }


@pytest.fixture(autouse=True)
def _empty_response_cache():
    """No test is served a response another test's rows made (tests/settings.py)."""
    from django.core.cache import caches

    caches["responses"].clear()


def run_folder(tmp_path_factory) -> Path:
    """The temporary folder every process of this run shares: the run's own, of which each
    worker process has a folder under xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def _voice_activity_once_per_file(tmp_path_factory):
    """Duplex-MPE's voice activity is found once per run for each distinct output file, except
    in Duplex-MPE's own tests of the detection (tests/benchmarks/duplexmpe/vad_once.py says why
    and how). Installed for the whole process, before any fixture that scores a run."""
    from evaluation.benchmarks.duplexmpe import vad
    from tests.benchmarks.duplexmpe import vad_once

    found = vad_once.Found(run_folder(tmp_path_factory) / "voice-activity-found")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(
            vad, "detect_stream", vad_once.detect_stream_once(vad.detect_stream, found)
        )
        yield


@pytest.fixture(autouse=True)
def _isolated_media(request, settings, tmp_path):
    """Each test writes its files under its own temporary folder (a module whose tests share
    rows, under the folder those rows' files are in)."""
    shared = "shared_db" in request.fixturenames
    location = request.getfixturevalue("shared_db") if shared else tmp_path / "media"
    settings.STORAGES = media_storages(location)


def _transactional(item) -> bool:
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    return bool(
        marker is not None
        and marker.kwargs.get("transaction")
        or {"transactional_db", "live_server"} & set(fixtures)
    )


@pytest.fixture(scope="module")
def shared_db(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """Rows that are costly to make (scored submissions), made once for a module: module
    fixtures that depend on this one write them inside a transaction that stays open while the
    module runs; each test runs inside it and rolls back to a savepoint, as Django's
    setUpTestData does for a class; the module's end rolls all back. Yields the storage folder
    of their files. Only for modules whose tests are not transactional (those flush the
    database)."""
    from django.db import transaction
    from django.test import override_settings

    flushing = [
        item.nodeid
        for item in request.session.items
        if item.module is request.module and _transactional(item)
    ]
    if flushing:
        pytest.fail(f"shared_db in a module with transactional tests: {flushing}")
    media = tmp_path_factory.mktemp("shared-media")
    with (
        django_db_blocker.unblock(),
        override_settings(STORAGES=media_storages(media)),
        transaction.atomic(),
    ):
        try:
            yield media
        finally:
            transaction.set_rollback(True)


def fresh(instance):
    """The row as the database has it now: a test may change the objects a module shares
    (shared_db), and its database changes roll back after it."""
    return None if instance is None else type(instance).objects.get(pk=instance.pk)


def fresh_all(instances: dict) -> dict:
    return {key: fresh(instance) for key, instance in instances.items()}


@contextlib.contextmanager
def scoring_here():
    """Outside a test's own fixtures (in a module fixture): every stage a submission queues
    runs at once in this process, and callbacks waiting for a commit run too."""
    from django.test import TestCase

    from evaluation.services.work import inline

    with inline(), TestCase.captureOnCommitCallbacks(execute=True):
        yield


def words(*items: tuple[str, float, float]) -> list[dict]:
    return [{"text": text, "timestamp": [start, end]} for text, start, end in items]


def transcript(chunks: list[dict], text: str | None = None) -> dict:
    return {"text": " ".join(c["text"] for c in chunks) if text is None else text, "chunks": chunks}


def write_task(folder: Path, files: dict[str, dict | str | bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
        else:
            path.write_text(json.dumps(content))


def wav_header(data_bytes: int, *, channels: int = 1, rate: int = 16_000, bits: int = 16) -> bytes:
    """A PCM WAV header (RIFF, fmt, data) for `data_bytes` bytes of samples, written by hand."""
    import struct

    block = channels * bits // 8
    # Header fields wrap as a hand-made header's would, for formats past their range.
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * block % 2**32, block % 2**16, bits)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", data_bytes)
    )


def wav_file(samples: bytes, **format) -> bytes:
    return wav_header(len(samples), **format) + samples


def zip_tree(source: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(source).as_posix())
    return target


def copy_examples(mpbench_dir: Path, target: Path) -> Path:
    shutil.copytree(mpbench_dir / "examples", target, dirs_exist_ok=True)
    return target


@pytest.fixture
def examples_bundle(mpbench_dir, tmp_path) -> Path:
    """MP-Bench's three real transcript folders as an upload (every other task missing)."""
    return zip_tree(copy_examples(mpbench_dir, tmp_path / "examples"), tmp_path / "examples.zip")


def submit_offline(benchmark, bundle: Path, name: str):
    """An upload (the examples, say) submitted under the benchmark's offline judge, which
    answers every judgment as it is linked."""
    from evaluation.services import submission_create

    return submission_create(
        benchmark=benchmark,
        bundle_path=bundle,
        system_name=name,
        judge=benchmark.judges.get(slug="offline"),
        allow_partial=True,
    )


# --- A local OpenAI-compatible judge server -----------------------------------------------


@dataclass
class JudgeServer:
    url: str
    requests: list[dict] = field(default_factory=list)
    # responder(body, call_number_for_this_prompt) -> (status, headers, body dict or raw str)
    responder: Callable[[dict, int], tuple[int, dict, object]] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def prompts(self) -> list[str]:
        return [r["messages"][-1]["content"] for r in self.requests]


def _default_answer(body: dict) -> dict:
    return {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": json.dumps({"correct": True, "consistent": True}),
                }
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    }


def completion(content: str, prompt_tokens: int = 100, completion_tokens: int = 5) -> dict:
    return {
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


class JudgeHTTPServer(ThreadingHTTPServer):
    # socketserver's default backlog is 5: more calls than that opening connections at once
    # would wait for the kernel's SYN retry (a second), not for the judge.
    request_queue_size = 128


@pytest.fixture
def judge_server():
    state = JudgeServer(url="")
    counts: dict[str, int] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            body["_path"] = self.path
            body["_auth"] = self.headers.get("Authorization")
            body["_headers"] = {key.lower(): value for key, value in self.headers.items()}
            prompt = body.get("messages", [{}])[-1].get("content", "")
            with state.lock:
                state.requests.append(body)
                counts[prompt] = counts.get(prompt, 0) + 1
                call = counts[prompt]
            if state.responder is None:
                status, headers, payload = 200, {}, _default_answer(body)
            else:
                status, headers, payload = state.responder(body, call)
            raw = payload if isinstance(payload, str) else json.dumps(payload)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(raw.encode())))
            self.end_headers()
            # The caller may have been killed mid-request, as the worker-kill test intends.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(raw.encode())

    server = JudgeHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(SERVE_POLL,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


# --- Memory ---------------------------------------------------------------------------------


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


@contextlib.contextmanager
def peak_rss_growth():
    """{"mib": growth} of this process's peak resident memory inside the block, under the
    product's collector thresholds: the kernel's high-water mark is reset on entry (Linux's
    clear_refs), so earlier peaks do not hide it."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("peak memory is read from /proc/self/status (Linux)")
    gc.collect()
    thresholds = gc.get_threshold()
    gc.set_threshold(*PRODUCT_GC_THRESHOLDS)
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_mib("VmRSS")
    measured: dict[str, float] = {}
    try:
        yield measured
        measured["mib"] = _status_mib("VmHWM") - before
    finally:
        gc.set_threshold(*thresholds)


def embedded_env(var: Path, **settings: str) -> dict:
    """The environment of a process on the embedded default: this one's, without the database
    and broker the test run may point at (a SQLite file and the filesystem broker under
    ``var`` instead), plus ``settings``."""
    skipped = ("DATABASE_URL", "CELERY_BROKER_URL", "FLOORBOARD_TEST_BROKER_URL")
    env = {key: value for key, value in os.environ.items() if key not in skipped}
    return env | {"FLOORBOARD_VAR_DIR": str(var), **settings}


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def require_service(name: str, host: str, port: int) -> None:
    if port_open(host, port):
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"{name} is not reachable on {host}:{port} and FLOORBOARD_REQUIRE_SERVICES=1")
    pytest.skip(f"{name} is not reachable on {host}:{port}")


# --- Headless Chromium --------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
]


@contextlib.contextmanager
def chromium_browser(monkeypatch):
    """Debian's Chromium driven by Playwright (no browser download)."""
    if not Path(CHROMIUM).exists():
        if REQUIRE_SERVICES:
            pytest.fail(f"no Chromium at {CHROMIUM} and FLOORBOARD_REQUIRE_SERVICES=1")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from django.db import connections
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's ORM calls stay sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        yield chromium
    finally:
        # While that loop runs, the ORM keeps connections per context rather than per thread:
        # close them before the test database is torn down.
        connections.close_all()
        chromium.close()
        playwright.stop()


@pytest.fixture
def browser(monkeypatch):
    with chromium_browser(monkeypatch) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def module_browser():
    """One Chromium for every test of a module (starting one takes about a second)."""
    with pytest.MonkeyPatch.context() as monkeypatch, chromium_browser(monkeypatch) as chromium:
        yield chromium


# --- S3-compatible storage: a moto server speaking HTTP on loopback ----------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3_server():
    import subprocess
    import sys
    import time

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "moto server did not start"
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(10)


def s3_storage_options(endpoint: str, bucket: str, **options) -> dict:
    """STORAGES["default"] for the site's own S3 backend (config/storage.py: bounded calls,
    SigV4) on ``bucket`` at ``endpoint``; ``options`` add to or replace its options."""
    return {
        "BACKEND": "config.storage.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "access_key": "test",
            "secret_key": "test",
            "file_overwrite": True,
            "querystring_expire": 300,
            **options,
        },
    }


# Servers a test starts itself (the storage proxy) listen on ports of this range.
TEST_PORTS = range(8820, 8840)


class StorageProxy:
    """A TCP proxy in front of the S3 server that the test controls: ``pause()`` (connections
    are accepted, nothing is ever answered, as a hung store), ``cut()`` (every connection is
    closed at once, as a store that is down) and ``resume()``. Pausing and cutting act on open
    connections too."""

    def __init__(self, upstream: str):
        parts = upstream.split("://", 1)[1].split(":")
        self._upstream = (parts[0], int(parts[1]))
        self.mode = "pass"
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for port in TEST_PORTS:
            try:
                self._listener.bind(("127.0.0.1", port))
                break
            except OSError:
                continue
        else:
            raise RuntimeError(f"no free port in {TEST_PORTS}")
        self._listener.listen(64)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def pause(self) -> None:
        self.mode = "pause"

    def cut(self) -> None:
        self.mode = "cut"
        self._drop_all()

    def resume(self) -> None:
        self.mode = "pass"

    def close(self) -> None:
        self._closed = True
        # Wakes the thread blocked in accept(), which would otherwise keep the port listening.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._drop_all()

    def _drop_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.mode == "cut":
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets += [client, upstream]
        for source, target in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        import time

        source.settimeout(0.05)
        while not self._closed:
            if self.mode == "pause":
                time.sleep(0.02)  # held: nothing read, nothing passed on
                continue
            if self.mode == "cut":
                break
            try:
                data = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            try:
                target.sendall(data)
            except OSError:
                break
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def storage_proxy(s3_server):
    proxy = StorageProxy(s3_server)
    yield proxy
    proxy.close()


def new_bucket(s3_server: str):
    """(client, name): a fresh bucket on the S3 server and a client that talks to it directly."""
    import time

    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=s3_server,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    name = f"floorboard-{time.monotonic_ns()}"
    client.create_bucket(Bucket=name)
    return client, name


@pytest.fixture
def proxied_bucket(storage_proxy, s3_server, settings):
    """(client, bucket, proxy): a fresh bucket the site reaches through the proxy, with the
    shipped storage timeouts; ``client`` talks to the S3 server directly (never paused)."""
    client, bucket = new_bucket(s3_server)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": s3_storage_options(storage_proxy.url, bucket),
    }
    yield client, bucket, storage_proxy
    storage_proxy.resume()


# --- Every plug-in -------------------------------------------------------------------------


# Folders of demo_files: what is written in one is written once a run (the first process to
# need it writes it while the others wait), and only read after.
_SHARED_DEMO_FOLDERS: set[Path] = set()
_demo_written: dict[Path, object] = {}


def _demo_write(folder: Path, write: Callable[[Path], object]):
    """write(folder), or what it returned the first time when ``folder`` is under demo_files."""
    if folder.parent.parent not in _SHARED_DEMO_FOLDERS:
        return write(folder)
    if folder not in _demo_written:
        folder.parent.mkdir(parents=True, exist_ok=True)
        written = folder.parent / f"{folder.name}.written"
        with open(folder.parent / f"{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not written.exists():
                written.write_bytes(pickle.dumps(write(folder)))
        _demo_written[folder] = pickle.loads(written.read_bytes())
    return _demo_written[folder]


@pytest.fixture(scope="session")
def demo_files(tmp_path_factory) -> Callable[[str], Path]:
    """slug -> a folder for every_plugin_board and demo_runs_scored shared by the tests of this
    run, every process of it: the plug-in's demo release and runs (synthesized audio, for some)
    are written there once, for tests that only read them."""
    base = run_folder(tmp_path_factory) / "demo-files"
    _SHARED_DEMO_FOLDERS.add(base)
    return lambda slug: base / slug


def every_plugin_board(slug: str, settings, folder: Path, *, name: str):
    """(benchmark, plug-in): the plug-in's demo release imported as ``<slug>-<name>``; the
    example plug-in is registered first when ``slug`` names it."""
    from evaluation.benchmarks import registry
    from evaluation.services import benchmark_import

    if slug == "toy-bench":
        settings.FLOORBOARD_BENCHMARKS = [*settings.FLOORBOARD_BENCHMARKS, "tests.toyplugin"]
    plugin = registry()[slug]
    demo_source(plugin, folder)
    benchmark = benchmark_import(
        slug=f"{slug}-{name}", directory=folder / "source", plugin=slug, is_demo=True
    ).benchmark
    return benchmark, plugin


def demo_source(plugin, folder: Path) -> Path:
    """The plug-in's demo release, written in ``folder / "source"`` (once, under demo_files)."""
    _demo_write(folder / "source", plugin.write_demo_source)
    return folder / "source"


def demo_runs(plugin, folder: Path) -> list:
    """The plug-in's demo runs, written in ``folder / "uploads"`` (once, under demo_files)."""
    return _demo_write(folder / "uploads", plugin.write_demo_runs)


def demo_runs_scored(benchmark, plugin, folder: Path, *, count: int) -> list:
    """The plug-in's first ``count`` demo runs submitted, published and scored in this process
    by the benchmark's offline judge; the submissions, read afresh, in run order."""
    from evaluation.models import Submission
    from evaluation.services import submission_create
    from evaluation.services.work import inline

    offline = benchmark.judges.get(slug="offline")
    made = []
    for run in demo_runs(plugin, folder)[:count]:
        with inline():
            made.append(
                submission_create(
                    benchmark=benchmark,
                    bundle_path=run.path,
                    system_name=run.system,
                    row_group=run.row_group,
                    judge=offline,
                    publish=True,
                    options=dict(run.options),
                    allow_partial=True,
                )
            )
    return [Submission.objects.get(pk=submission.pk) for submission in made]
