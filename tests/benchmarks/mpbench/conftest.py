"""The upload tests' people and teams (alice owns team alpha) and start fields, for MP-Bench's
upload tests."""

from tests.leaderboard.uploads import conftest as uploads
from tests.leaderboard.uploads.conftest import people  # noqa: F401 (a fixture)


def start_fields(**fields) -> dict:
    """The upload tests' start fields (written for the example plug-in) for MP-Bench: one of
    its row groups, and no run mode (MP-Bench declares none)."""
    found = uploads.start_fields(**{"system_type": "realtime", **fields})
    del found["option_mode"]
    return found
