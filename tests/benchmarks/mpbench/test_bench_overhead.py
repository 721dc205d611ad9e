"""`manage.py bench_overhead`, the hosting-overhead figure `make bench` prints: run as a user runs
it, on the embedded default (SQLite, the filesystem broker) and on PostgreSQL + Redis, with real
worker processes. Each pass must give the plain pass's results from one judge call per distinct
request, or the command fails; what the passes stored is gone afterwards."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from config.devtools.bench_support import differences, process_cpu_seconds
from config.devtools.management.commands.bench_overhead import Command
from evaluation.models import Benchmark, JudgeCharge, Judgment, Submission, System
from tests.conftest import REPO, SHARED_MPBENCH, embedded_env, require_service

BROKER = os.environ.get("FLOORBOARD_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
# The synthetic run over the 927 real tasks: 1,078 judged slots, four of them byte-identical to
# another's request (speaker-name tasks with the same question, name and response). Two uploads
# share 51 more: turn-taking tasks where the agent was silent ask the same in both.
CALLS, DISTINCT, TWO_UPLOADS = 1078, 1074, 2 * 1074 - 51

TABLE = {
    "understanding": {
        "n": 10,
        "overall_acc": {"count": 9, "total": 10, "pct": 90.0},
        "latency_s": 1.2,
    },
    "turnbased": {"n": 4, "tt_acc": {"count": 4, "total": 4, "pct": 100.0}, "latency_s": None},
}


def test_differences_name_every_leaf_that_differs():
    changed = {
        "understanding": {
            "n": 10,
            "overall_acc": {"count": 8, "total": 10, "pct": 80.0},
            "spk_name_acc": {"count": 1, "total": 1, "pct": 100.0},
        },
        "turnbased": {"n": 4, "tt_acc": {"count": 4, "total": 4, "pct": 100.0}, "latency_s": 0},
    }
    assert differences(TABLE, changed) == [
        "turnbased.latency_s: None != 0",
        "understanding.latency_s: 1.2 != (missing)",
        "understanding.overall_acc.count: 9 != 8",
        "understanding.overall_acc.pct: 90.0 != 80.0",
        "understanding.spk_name_acc: (missing) != {'count': 1, 'total': 1, 'pct': 100.0}",
    ]


def test_differences_compare_values_as_stored():
    assert differences(TABLE, TABLE) == []
    assert differences({"ranks": (1, 2)}, {"ranks": [1, 2]}) == []  # JSON has no tuple
    assert differences({"pct": 90}, {"pct": 90.0}) == []  # one number, as JSON reads it
    assert differences({"spoke": True}, {"spoke": 1}) == ["spoke: True != 1"]
    assert differences([1, 2], [1, 2, 3]) == ["(the whole value): [1, 2] != [1, 2, 3]"]


def test_a_pass_whose_results_or_calls_differ_fails():
    check = Command()._check
    other = {**TABLE, "turnbased": {**TABLE["turnbased"], "n": 5}}
    check([TABLE, other], [TABLE, other], DISTINCT, DISTINCT)  # what a good pass gives
    with pytest.raises(
        CommandError, match=r"upload 2: .* differ .* in 1 place\(s\): turnbased.n: 5 != 4"
    ):
        check([TABLE, other], [TABLE, TABLE], DISTINCT, DISTINCT)
    with pytest.raises(CommandError, match=r"1 of 2 scored upload\(s\) have no score stored"):
        check([TABLE, TABLE], [TABLE, None], DISTINCT, DISTINCT)
    with pytest.raises(
        CommandError, match="asked the judge 1075 times, where the uploads have 1074"
    ):
        check([TABLE], [TABLE], DISTINCT, DISTINCT + 1)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc on this system")
def test_process_cpu_seconds_reads_another_processs_time():
    """What the process itself counts (time.process_time, user and system time of all its
    threads; time.thread_time, its main thread's), read from outside while it waits; None once
    it is gone."""
    busy = (
        "import sys, threading, time\n"
        "def burn(seconds):\n"
        "    end = time.thread_time() + seconds\n"
        "    while time.thread_time() < end: pass\n"
        "other = threading.Thread(target=burn, args=(0.2,))\n"
        "other.start(); other.join()\n"
        "burn(0.3)\n"
        "print(time.process_time(), time.thread_time(), flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", busy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    own, main = map(float, child.stdout.readline().split())
    read = process_cpu_seconds(child.pid)
    read_main = process_cpu_seconds(child.pid, main_thread=True)
    child.communicate("")
    assert main >= 0.3
    assert own >= main + 0.2
    # /proc counts in clock ticks (1/100 s here); the print itself costs next to nothing.
    assert read == pytest.approx(own, abs=0.03)
    assert read_main == pytest.approx(main, abs=0.03)
    assert process_cpu_seconds(child.pid) is None
    assert process_cpu_seconds(child.pid, main_thread=True) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--repeat", "0"], "must be >= 1"),
        (["--workers", "0"], "must be >= 1"),
        (["--submissions", "2", "--latency", "0"], "give a --latency above 0"),
    ],
)
def test_options_that_cannot_measure_anything_are_refused(tmp_path, options, message):
    (tmp_path / "tasks.jsonl").write_text("")
    with pytest.raises(CommandError, match=message):
        call_command("bench_overhead", "--benchmark-dir", str(tmp_path), *options)


# --- The command, as `make bench` runs it -------------------------------------------------------


INSTANT_TWICE = ("--latency", "0", "--repeat", "2")


def run_bench(env: dict, tmp_path: Path, *options: str) -> str:
    """bench_overhead with these options; its output. Temporary files go under tmp_path/tmp,
    which is checked empty of them afterwards."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    result = subprocess.run(
        [
            *(sys.executable, "manage.py", "bench_overhead", *options),
            *("--benchmark-dir", str(SHARED_MPBENCH)),
        ],
        cwd=REPO,
        env={**env, "TMPDIR": str(temporary)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    # Only the workers' log is left (appended to by every run, as /tmp keeps it).
    assert [path.name for path in temporary.iterdir()] == ["floorboard-overhead-worker.log"]
    return result.stdout


def assert_quotient(printed: float, numerator: float, denominator: float) -> None:
    """``printed`` is numerator / denominator, each of the three printed to two decimals: it lies
    within 0.005 of a quotient of values within 0.005 of those printed."""
    low = (numerator - 0.005) / (denominator + 0.005) - 0.005
    high = (numerator + 0.005) / (denominator - 0.005) + 0.005
    assert low <= printed <= high, (printed, numerator, denominator)


def assert_figures(output: str, database: str, broker: str) -> None:
    lines = output.strip().splitlines()
    assert lines[0] == f"{database} + {broker} broker, judge 0 ms, 1 worker(s), bound 16"
    ratios, cpu_ratios = [], []
    for run in (1, 2):
        plain = re.fullmatch(rf"pass {run}: plain Python: (\d+\.\d\d) s for (\d+) calls", lines[1])
        site = re.fullmatch(rf"pass {run}: the site: +(\d+\.\d\d) s   ratio (\d+\.\d\d)", lines[2])
        cpu = re.fullmatch(
            rf"pass {run}: processor: plain (\d+\.\d\d) s, the site (\d+\.\d\d) s "
            r"\(upload (\d+\.\d\d), workers (\d+\.\d\d): main thread (\d+\.\d\d), "
            r"other threads (\d+\.\d\d)\)   ratio (\d+\.\d\d)",
            lines[3],
        )
        stages = re.fullmatch(
            rf"pass {run}: the site's stages: accepted (\d+\.\d\d) s, first judgment "
            r"(\d+\.\d\d) s, last answer (\d+\.\d\d) s, scored (\d+\.\d\d) s",
            lines[4],
        )
        assert plain and site and cpu and stages, lines[1:5]
        assert int(plain[2]) == CALLS
        assert_quotient(float(site[2]), float(site[1]), float(plain[1]))
        ratios.append(float(site[2]))
        plain_cpu, site_cpu, upload_cpu, worker_cpu, main_cpu, other_cpu, cpu_ratio = map(
            float, cpu.groups()
        )
        # The processes did the work: the plain pass's calls, the upload's validation, the
        # worker's stages (its main thread) and its judge calls (its other threads) each take
        # a measurable share of a second.
        assert min(plain_cpu, upload_cpu, main_cpu, other_cpu) > 0.05, lines[3]
        assert site_cpu == pytest.approx(upload_cpu + worker_cpu, abs=0.0101)
        assert worker_cpu == pytest.approx(main_cpu + other_cpu, abs=0.0101)
        assert_quotient(cpu_ratio, site_cpu, plain_cpu)
        cpu_ratios.append(cpu_ratio)
        # In the order the pipeline runs them, the last when the site's clock stopped.
        ends = [float(end) for end in stages.groups()]
        assert 0 < ends[0] <= ends[1] <= ends[2] <= ends[3], lines[4]
        assert ends[3] == float(site[1])
        lines = lines[4:]
    assert lines[1] == (
        f"results identical to the plain pass's; {DISTINCT} judge calls, one per distinct "
        f"request of the plain pass's {CALLS}, in each of 2 passes"
    )
    median = re.fullmatch(r"median ratio (\d+\.\d\d) of 2 \((\d+\.\d\d), (\d+\.\d\d)\)", lines[2])
    assert median, lines[2]
    assert [float(median[2]), float(median[3])] == ratios
    # Each printed ratio, and the median, is within 0.005 of its value.
    assert float(median[1]) == pytest.approx(sum(ratios) / 2, abs=0.0101)
    median = re.fullmatch(
        r"median processor ratio (\d+\.\d\d) of 2 \((\d+\.\d\d), (\d+\.\d\d)\)", lines[3]
    )
    assert median, lines[3]
    assert [float(median[2]), float(median[3])] == cpu_ratios
    assert float(median[1]) == pytest.approx(sum(cpu_ratios) / 2, abs=0.0101)


def assert_media_empty(media: Path) -> None:
    """The bundles were stored there, and are gone."""
    assert (media / "bundles").is_dir()
    assert [path for path in media.rglob("*") if path.is_file()] == []


@pytest.mark.services
def test_bench_overhead_on_the_embedded_default(tmp_path, mpbench_dir):
    var = tmp_path / "var"
    # The shipped settings (not the tests'), as `make bench` runs them.
    env = embedded_env(
        var, FLOORBOARD_MEDIA_ROOT=str(var / "media"), DJANGO_SETTINGS_MODULE="config.settings"
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    output = run_bench(env, tmp_path, *INSTANT_TWICE)
    assert_figures(output, "sqlite", "filesystem")
    with sqlite3.connect(var / "floorboard.sqlite3") as db:
        tables = ("benchmark", "submission", "judgment", "judgecharge", "system")
        for table in (f"evaluation_{name}" for name in tables):
            assert db.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
    assert_media_empty(var / "media")


def postgresql_env(tmp_path: Path) -> dict:
    """The shipped settings on this test's database, Redis and a queue of the test's own."""
    require_service("Redis", "127.0.0.1", 6379)
    db = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": BROKER,
        "FLOORBOARD_QUEUE": f"floorboard-test-{uuid.uuid4().hex[:8]}",
        "FLOORBOARD_MEDIA_ROOT": str(tmp_path / "media"),
        "FLOORBOARD_VAR_DIR": str(tmp_path / "var"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


def assert_nothing_left(tmp_path: Path) -> None:
    assert not Benchmark.objects.exists()
    assert not Submission.objects.exists()
    assert not Judgment.objects.exists()
    assert not JudgeCharge.objects.exists()
    assert not System.objects.exists()
    assert_media_empty(tmp_path / "media")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_bench_overhead_on_postgresql_and_redis(postgres, mpbench_dir, tmp_path):
    output = run_bench(postgresql_env(tmp_path), tmp_path, *INSTANT_TWICE)
    assert_figures(output, "postgresql", "redis")
    assert_nothing_left(tmp_path)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_bench_overhead_with_two_uploads_at_once(postgres, mpbench_dir, tmp_path):
    """Two uploads, two workers: timed against the ideal, calls x latency / bound, where the
    calls are the distinct requests of both (they share those no response tells apart)."""
    output = run_bench(
        postgresql_env(tmp_path),
        tmp_path,
        *("--latency", "0.01", "--submissions", "2", "--workers", "2"),
    )
    lines = output.strip().splitlines()
    assert lines[0] == "postgresql + redis broker, judge 10 ms, 2 worker(s), bound 16"
    figures = re.fullmatch(
        r"2 submissions at once: (\d+\.\d\d) s for (\d+) calls; ideal (\d+\.\d\d) s"
        r"   ratio (\d+\.\d\d)",
        lines[1],
    )
    assert figures, lines[1]
    seconds, calls, ideal, ratio = (float(figures[n]) for n in (1, 2, 3, 4))
    assert calls == TWO_UPLOADS
    assert ideal == pytest.approx(calls * 0.01 / 16, abs=0.006)
    assert_quotient(ratio, seconds, ideal)
    assert lines[2] == (
        f"results identical to the plain pass's; {calls:.0f} judge calls, one per distinct request "
        f"of the 2 uploads' {2 * CALLS}"
    )
    assert_nothing_left(tmp_path)
