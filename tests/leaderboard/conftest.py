"""Fixtures of the board tests that share their scored rows per module (tests/conftest.py
shared_db): the cast, made once, and each test's fresh copies of it and of the module's runs."""

import pytest

from tests.conftest import fresh, fresh_all
from tests.leaderboard.cast import lab_and_rivals


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
