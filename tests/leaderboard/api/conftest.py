from tests.leaderboard.accounts.people import (  # noqa: F401
    _fresh_throttle_counts,
    scored_world,
    shared_world,
    world,
)
