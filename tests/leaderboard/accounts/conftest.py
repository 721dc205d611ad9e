from tests.leaderboard.accounts.people import (  # noqa: F401
    _fresh_throttle_counts,
    shared_world,
    world,
)
