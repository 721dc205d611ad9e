"""Fixtures of the board tests that share their scored rows per module (tests/conftest.py
shared_db): the cast, made once, and each test's fresh copies of it and of the module's runs;
and MP-Bench imported from its plug-in's own demo release, for board tests that need its
metrics and the paper's rows but none of its data."""

import re
from pathlib import Path

import pytest

from tests.conftest import fresh, fresh_all
from tests.leaderboard.cast import lab_and_rivals

# A signed audio URL: signed anew, to the second, each time a page is laid out for a reader.
AUDIO_URL = re.compile(r'/audio/[^/"]+/')


@pytest.fixture(scope="module")
def shared_people(shared_db):
    return lab_and_rivals()


@pytest.fixture
def people(db, shared_people):
    lab, users = shared_people
    return fresh(lab), fresh_all(users)


@pytest.fixture
def runs(db, shared_runs):
    """The module's scored runs (its shared_runs fixture), read afresh for this test."""
    return fresh_all(shared_runs)


def mpbench_demo_import(folder: Path):
    """MP-Bench as "mp-bench", its release the plug-in's own demo one (write_demo_source),
    made here with nothing beside the checkout; imported as a release (not as a demo), so the
    paper's rows and the official judge are on it, as on the real one. The board reads only
    the scores' numbers: its tests need the plug-in's metrics, not its 927 tasks."""
    from evaluation.benchmarks import get_plugin
    from evaluation.services import benchmark_import

    get_plugin("mp-bench").write_demo_source(folder)
    return benchmark_import(
        slug="mp-bench", directory=folder, plugin="mp-bench", name="MP-Bench"
    ).benchmark


@pytest.fixture
def mpbench_demo(request, db, tmp_path):
    """MP-Bench from its demo release (mpbench_demo_import); in a module sharing rows, the one
    the module imported, read afresh."""
    if "shared_db" in request.fixturenames:
        return fresh(request.getfixturevalue("shared_mpbench_demo"))  # imported once
    return mpbench_demo_import(tmp_path / "mpbench-demo")


@pytest.fixture(scope="module")
def shared_mpbench_demo(shared_db, tmp_path_factory):
    """mpbench_demo imported once for a module whose tests share rows (see shared_db)."""
    return mpbench_demo_import(tmp_path_factory.mktemp("mpbench-demo"))
