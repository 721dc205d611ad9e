"""Hostile uploads at full size, replayed against the site as the image runs it: gunicorn with one
sync worker and a Celery worker, on the configured database, broker and storage, DEBUG off.

For every registered plug-in, built from its first demo run:

- entries: a zip of 2,000,000 empty entries (about 210 MB; its end records say so);
- text: the run's first text member (a JSONL or JSON file; a single-file upload is that file)
  grown to --text-mb MB in a zip: a JSONL file by repeating its lines, a JSON file by trailing
  whitespace (mostly spaces, so that it deflates about 40:1);
- audio: the run's first WAV member, where it has one, replaced by --audio-mb MB of silence in
  the member's own format under a valid header (zeros deflate about 1000:1).

Each is sent to POST /api/submissions/ with an API token and followed until its upload is
rejected or its submission is scored or failed. Before each, the kernel's peak resident memory of
the web and worker processes is reset (Linux's /proc/<pid>/clear_refs) and their resident memory
read; after, the growth of the peak over it is printed per tier (the largest of the tier's
processes), with the outcome and the seconds it took. The command fails when a growth reaches
--limit-mb or when a process of either tier died. (Silence within a benchmark's audio limits is
a valid run: it may be scored.) `make bench-attacks` runs it on a site of its own under var/bench-attacks.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import wave
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from evaluation.benchmarks import registry
from evaluation.management.commands.run_demo import worker_command
from evaluation.models import Benchmark, Membership, Team
from evaluation.services import benchmark_import
from leaderboard.accounts.services import api_token_create

MIB = 1024 * 1024
ENTRIES = 2_000_000
BLOCK = 64 * MIB  # generated and deflated a block at a time
UPLOAD_FINAL = {"rejected", "accepted", "cancelled", "expired"}
SUBMISSION_FINAL = {"scored", "failed"}


@dataclass
class Attack:
    plugin: str
    name: str
    bundle: Path
    options: dict


@dataclass
class Outcome:
    web_mib: float
    worker_mib: float
    seconds: float
    result: str


# --- The bundles ----------------------------------------------------------------------------


def entries_zip(path: Path, count: int = ENTRIES) -> Path:
    """A zip of ``count`` empty stored entries, written record by record (zipfile would hold
    every entry's ZipInfo in memory), with the zip64 end records that a count past 65,535
    needs."""
    central = bytearray()
    offset = 0
    with path.open("wb") as out:
        for start in range(0, count, 100_000):
            local = bytearray()
            for n in range(start, min(start + 100_000, count)):
                name = f"junk/{n}.txt".encode()
                # Version 1.0, no flags, stored, 1980-01-01, crc and sizes 0.
                local += struct.pack(
                    "<IHHHHHIIIHH", 0x04034B50, 10, 0, 0, 0, 0x21, 0, 0, 0, len(name), 0
                )
                local += name
                central += struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    0x02014B50, 20, 10, 0, 0, 0, 0x21, 0, 0, 0, len(name), 0, 0, 0, 0, 0, offset,
                )  # fmt: skip
                central += name
                offset += 30 + len(name)
            out.write(local)
        out.write(central)
        end64 = offset + len(central)
        out.write(
            struct.pack(
                "<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(central), offset
            )
        )
        out.write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        out.write(
            struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, len(central), offset, 0)
        )
    return path


def _whitespace(size: int, rng: np.random.Generator) -> bytes:
    """``size`` bytes of spaces with one random whitespace character in every 64."""
    block = np.full(size, ord(" "), dtype=np.uint8)
    block[::64] = rng.choice(np.frombuffer(b" \n\t\r", dtype=np.uint8), size=len(block[::64]))
    return block.tobytes()


def _grown(data: bytes, name: str, size: int):
    """``data`` grown to ``size`` bytes, a block at a time: JSONL by repeating its lines, JSON
    by trailing whitespace."""
    yield data
    written = len(data)
    if name.endswith(".jsonl"):
        lines = data if data.endswith(b"\n") else data + b"\n"
        per_block = max(1, BLOCK // len(lines))
        while written < size:
            # Whole lines, the last block only as many as reach the size.
            block = lines * min(per_block, -(-(size - written) // len(lines)))
            yield block
            written += len(block)
        return
    rng = np.random.default_rng(7)
    while written < size:
        part = _whitespace(min(BLOCK, size - written), rng)
        yield part
        written += len(part)


def _copy_except(source: Path, target: zipfile.ZipFile, skip: str) -> None:
    with zipfile.ZipFile(source) as archive:
        for info in archive.infolist():
            if info.filename != skip and not info.is_dir():
                with archive.open(info) as read, target.open(info.filename, "w") as write:
                    shutil.copyfileobj(read, write, MIB)


def _member_sizes(bundle: Path) -> dict[str, int]:
    if not zipfile.is_zipfile(bundle):
        return {bundle.name: bundle.stat().st_size}
    with zipfile.ZipFile(bundle) as archive:
        return {i.filename: i.file_size for i in archive.infolist() if not i.is_dir()}


def _read_member(bundle: Path, name: str) -> bytes:
    if not zipfile.is_zipfile(bundle):
        return bundle.read_bytes()
    with zipfile.ZipFile(bundle) as archive:
        return archive.read(name)


def text_zip(bundle: Path, path: Path, size: int) -> Path | None:
    """The bundle with its first JSONL (else JSON) member grown to ``size`` bytes; None when
    it has neither."""
    sizes = _member_sizes(bundle)
    texts = [n for n in sizes if n.endswith(".jsonl")] or [
        n for n in sizes if n.endswith(".json") and Path(n).name != "manifest.json"
    ]
    picked = max(texts, key=sizes.get, default=None)
    if picked is None:
        return None
    data = _read_member(bundle, picked)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        if zipfile.is_zipfile(bundle):
            _copy_except(bundle, out, picked)
        with out.open(picked, "w", force_zip64=True) as member:
            for block in _grown(data, picked, size):
                member.write(block)
    return path


def audio_zip(bundle: Path, path: Path, size: int) -> Path | None:
    """The bundle with its first WAV member replaced by ``size`` bytes of silence in its own
    format; None when it has none."""
    if not zipfile.is_zipfile(bundle):
        return None
    picked = next((n for n in _member_sizes(bundle) if n.lower().endswith(".wav")), None)
    if picked is None:
        return None
    with (
        zipfile.ZipFile(bundle) as archive,
        archive.open(picked) as handle,
        wave.open(handle) as original,
    ):
        channels, width, rate = (
            original.getnchannels(),
            original.getsampwidth(),
            original.getframerate(),
        )
    frames = size // (channels * width)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        _copy_except(bundle, out, picked)
        with out.open(picked, "w", force_zip64=True) as member:
            data = frames * channels * width
            member.write(
                b"RIFF"
                + struct.pack("<I", min(36 + data, 0xFFFFFFFF))
                + b"WAVEfmt "
                + struct.pack(
                    "<IHHIIHH",
                    16,
                    1,
                    channels,
                    rate,
                    rate * channels * width,
                    channels * width,
                    8 * width,
                )
                + b"data"
                + struct.pack("<I", min(data, 0xFFFFFFFF))
            )
            zeros = bytes(BLOCK)
            while data > 0:
                member.write(zeros[: min(BLOCK, data)])
                data -= BLOCK
    return path


def attacks_for(plugin, folder: Path, entries: Path, *, text_mb: int, audio_mb: int) -> list:
    folder.mkdir(parents=True, exist_ok=True)
    try:
        runs = plugin.write_demo_runs(folder / "demo")
    except NotImplementedError:
        runs = []
    if not runs:
        return []
    run = runs[0]
    bundle = run.path
    if bundle.is_dir():
        bundle = Path(shutil.make_archive(str(folder / "run"), "zip", root_dir=bundle))
    made = [Attack(plugin.slug, "entries", entries, dict(run.options))]
    text = text_zip(bundle, folder / "text.zip", text_mb * MIB)
    if text is not None:
        made.append(Attack(plugin.slug, f"text {text_mb} MB", text, dict(run.options)))
    audio = audio_zip(bundle, folder / "audio.zip", audio_mb * MIB)
    if audio is not None:
        made.append(Attack(plugin.slug, f"audio {audio_mb} MB", audio, dict(run.options)))
    return made


# --- The processes --------------------------------------------------------------------------


def _status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def process_tree(pid: int) -> list[int]:
    """The process and its descendants, read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(parents.get(current, []))
    return found


class Tier:
    """A process group of the site (web or worker) whose peak memory is measured."""

    def __init__(self, name: str, command: list[str], env: dict, log: Path):
        self.name = name
        self.log = log
        self.process = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.baseline: dict[int, float] = {}

    def alive(self) -> bool:
        return self.process.poll() is None

    def reset(self) -> None:
        """Peaks reset; resident memory read as the baseline."""
        self.baseline = {}
        for pid in process_tree(self.process.pid):
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
                self.baseline[pid] = _status_mib(pid, "VmRSS")
            except OSError:
                continue

    def growth(self) -> float:
        """The largest growth of a process's peak over its baseline (a process started since
        counts from zero)."""
        grown = 0.0
        for pid in process_tree(self.process.pid):
            try:
                grown = max(grown, _status_mib(pid, "VmHWM") - self.baseline.get(pid, 0.0))
            except OSError:
                continue
        return grown

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--text-mb", type=int, default=900)
        parser.add_argument("--audio-mb", type=int, default=1536)
        parser.add_argument("--entries", type=int, default=ENTRIES)
        parser.add_argument("--limit-mb", type=float, default=300.0)
        parser.add_argument("--timeout", type=float, default=900.0, help="seconds per attack")
        parser.add_argument("--plugin", action="append", help="only these plug-ins (slugs)")

    def handle(self, *args, text_mb, audio_mb, entries, limit_mb, timeout, plugin, **options):
        if settings.DEBUG:
            raise CommandError("run it with DEBUG off: the site is measured as it is deployed")
        if not Path("/proc/self/clear_refs").exists():
            raise CommandError("peak memory is read from /proc (Linux)")
        call_command("migrate", "--noinput", verbosity=0)
        plugins = [p for slug, p in sorted(registry().items()) if not plugin or slug in plugin]
        work = Path(tempfile.mkdtemp(prefix="bench-attacks-", dir=settings.VAR_DIR))
        tiers: list[Tier] = []
        try:
            self.stdout.write(f"building the bundles under {work} ...")
            shared = entries_zip(work / "entries.zip", entries)
            attacks = []
            for p in plugins:
                attacks += attacks_for(p, work / p.slug, shared, text_mb=text_mb, audio_mb=audio_mb)
            boards = {p.slug: self._board(p, work / p.slug / "source") for p in plugins}
            token = self._token(boards)
            port = free_port()
            env = {
                **os.environ,
                "DJANGO_DEBUG": "",
                "FLOORBOARD_SSL_REDIRECT": "0",
                "FLOORBOARD_SECURE_COOKIES": "0",
                "PYTHONUNBUFFERED": "1",
            }

            tiers = [
                Tier(
                    "web",
                    [
                        sys.executable,
                        "-m",
                        "gunicorn",
                        "config.wsgi:application",
                        "--bind",
                        f"127.0.0.1:{port}",
                        "--workers",
                        "1",
                        "--timeout",
                        "120",
                    ],
                    env,
                    work / "web.log",
                ),
                Tier("worker", worker_command(), env, work / "worker.log"),
            ]
            base = f"http://127.0.0.1:{port}"
            self._wait_up(base)
            self._warm_up(base, token)
            time.sleep(5)  # the worker connects to its broker
            failures = []
            self.stdout.write(
                f"{'plug-in':<14} {'attack':<16} {'web MiB':>8} {'worker MiB':>11} "
                f"{'seconds':>8}  outcome"
            )
            for attack in attacks:
                for tier in tiers:
                    tier.reset()
                outcome = self._replay(base, token, attack, boards, tiers, timeout)
                self.stdout.write(
                    f"{attack.plugin:<14} {attack.name:<16} {outcome.web_mib:8.0f} "
                    f"{outcome.worker_mib:11.0f} {outcome.seconds:8.1f}  {outcome.result}"
                )
                if max(outcome.web_mib, outcome.worker_mib) >= limit_mb:
                    failures.append(f"{attack.plugin} {attack.name}: peak grew past {limit_mb} MiB")
                for tier in tiers:
                    if not tier.alive():
                        failures.append(f"{attack.plugin} {attack.name}: the {tier.name} died")
                if any(not tier.alive() for tier in tiers):
                    break
        finally:
            for tier in tiers:
                tier.stop()
            shutil.rmtree(work, ignore_errors=True)
        if failures:
            raise CommandError("; ".join(failures))
        self.stdout.write(f"every peak grew by less than {limit_mb:.0f} MiB")

    def _board(self, plugin, source: Path) -> Benchmark:
        slug = f"{plugin.slug}-attacks"
        board = Benchmark.objects.filter(slug=slug).first()
        if board is None:
            plugin.write_demo_source(source)
            board = benchmark_import(
                slug=slug, directory=source, plugin=plugin.slug, is_demo=True
            ).benchmark
        return board

    def _token(self, boards: dict) -> str:
        user, _ = User.objects.get_or_create(username="bench-attacks")
        team = Team.objects.filter(slug="bench-attacks").first()
        if team is None:
            # One attack after another: the team's daily count is not what is measured.
            team = Team.objects.create(
                name="bench attacks", slug="bench-attacks", max_submissions_per_day=1000
            )
        Membership.objects.get_or_create(
            user=user, team=team, defaults={"role": Membership.Role.OWNER}
        )
        return api_token_create(user=user, name=f"bench {time.time():.0f}")[1]

    def _wait_up(self, base: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.5)
        raise CommandError("the web process did not answer within 60 s")

    def _warm_up(self, base: str, token: str) -> None:
        """A read and a refused upload first, so that the first attack's figure is not the
        web process importing what every request needs."""
        headers = {"Authorization": f"Bearer {token}"}
        httpx.get(f"{base}/api/benchmarks/", headers=headers, timeout=60)
        httpx.post(f"{base}/api/submissions/", headers=headers, data={}, timeout=60)

    def _replay(self, base, token, attack: Attack, boards, tiers, timeout) -> Outcome:
        headers = {"Authorization": f"Bearer {token}"}
        data = {
            "benchmark": boards[attack.plugin].slug,
            "system": f"attack {attack.name}",
            "team": "bench-attacks",
            "judge": "offline",
            "allow_partial": "true",
            **{f"option_{k}": v for k, v in attack.options.items()},
        }
        started = time.monotonic()
        with httpx.Client(base_url=base, headers=headers, timeout=timeout) as client:
            with attack.bundle.open("rb") as handle:
                response = client.post(
                    "/api/submissions/",
                    data=data,
                    files={"bundle": (attack.bundle.name, handle, "application/zip")},
                )
            result = f"HTTP {response.status_code}"
            if response.status_code == 202:
                result = self._follow(client, response.json()["url"], started, timeout, tiers)
            elif response.headers.get("content-type", "").startswith("application/json"):
                result += f": {str(response.json())[:120]}"
        web, worker = (tier.growth() for tier in tiers)
        return Outcome(web, worker, time.monotonic() - started, result)

    def _follow(self, client, url, started, timeout, tiers) -> str:
        state: dict = {}
        while time.monotonic() - started < timeout and all(t.alive() for t in tiers):
            state = client.get(url).json()
            if state["status"] in UPLOAD_FINAL:
                break
            time.sleep(0.5)
        else:
            return f"still {state.get('status', 'unknown')} after {timeout:.0f} s"
        if state["status"] != "accepted":
            report = state.get("report") or {}
            problems = report.get("problems") or report.get("errors") or []
            said = state.get("error") or (str(problems[0]) if problems else "")
            return f"{state['status']}: {said[:120]}"
        submission = state["submission"]
        while time.monotonic() - started < timeout and all(t.alive() for t in tiers):
            found = client.get(submission["url"]).json()
            if found["status"] in SUBMISSION_FINAL:
                return f"{found['status']} (submission {submission['id']})"
            time.sleep(1)
        return f"accepted, not final after {timeout:.0f} s"
