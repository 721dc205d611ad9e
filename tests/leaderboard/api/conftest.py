from tests.leaderboard.accounts.people import (  # noqa: F401
    _fast_passwords,
    _fresh_throttle_counts,
    world,
)
