"""Time conventions and speech predicates of SPEC §5, and the episode normalisation of §4.

Every time is an integer number of milliseconds once it enters the scorer: seconds are converted
with ROUND_HALF_UP on their decimal value (0.0005 s -> 1 ms), so float noise never decides a
boundary. Segments are half-open [start, end).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

W_T_MS = 5000  # a fresh response must start within 5 s of the T turn's end
GAP_MS = 3000  # silence the scheduler leaves after an N4 question
DEADLINE_MS = 2000  # the model must have stopped 2 s into the resolution
POST_MS = 500  # silence after an ordinary turn; also the tail of a silence window
MERGE_MS = 800  # pauses shorter than this are inside one episode
MIN_MS = 120  # shorter episodes are not speech
N_MIN = 30  # yield is reported only over at least this many eligible events

Segment = tuple[int, int]
# No time of a run lies a day from its start (a run lasts minutes): one that does is refused
# as not a time (our decision; a decimal of 1e300 s has no millisecond to round to).
MAX_SECONDS = 24 * 3600


def is_time(value) -> bool:
    """A number of seconds to_ms takes: an int or float, not a boolean, within a day of 0."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= MAX_SECONDS
    )


def to_ms(seconds: float | int | str | Decimal) -> int:
    """Seconds to integer ms, half up on the decimal value as written (a float by its repr)."""
    if isinstance(seconds, bool):
        raise TypeError("a time must be a number, not a boolean")
    value = seconds if isinstance(seconds, Decimal) else Decimal(str(seconds))
    if not value.is_finite():
        raise ValueError(f"a time must be finite, got {seconds!r}")
    if abs(value) > MAX_SECONDS:
        raise ValueError(f"a time must be within {MAX_SECONDS:,} s, got {seconds!r}")
    return int((value * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def samples_to_ms(samples: int, sample_rate: int) -> int:
    """A sample position to ms, half up on the exact value (16 kHz: 1 sample = 0.0625 ms)."""
    exact = Fraction(samples * 1000, sample_rate)
    return int(exact + Fraction(1, 2)) if exact >= 0 else -int(-exact + Fraction(1, 2))


def ms_to_s(ms: int) -> float:
    return ms / 1000


def segments_to_ms(segments: Sequence[Sequence[float]]) -> list[Segment]:
    return [(to_ms(start), to_ms(end)) for start, end in segments]


def normalise(segments: Sequence[Segment]) -> list[Segment]:
    """SPEC §4 in order: sort; join segments that overlap, touch, or are separated by a pause
    shorter than MERGE_MS (strict: a pause of exactly 800 ms separates); then drop episodes
    shorter than MIN_MS (exactly 120 ms stays). Idempotent."""
    merged: list[list[int]] = []
    for start, end in sorted(segments):
        if start >= end:
            raise ValueError(f"segment [{start}, {end}) ms does not end after it starts")
        if merged and start - merged[-1][1] < MERGE_MS:  # overlap and touch are gaps <= 0
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged if end - start >= MIN_MS]


def active(segments: Sequence[Segment], t: int) -> bool:
    """Speech at instant t: some s <= t < e."""
    return any(s <= t < e for s, e in segments)


def onset_in(segments: Sequence[Segment], a: int, b: int) -> bool:
    """A segment starts in (a, b]."""
    return any(a < s <= b for s, _ in segments)


def overlaps(segments: Sequence[Segment], a: int, b: int) -> bool:
    """Some speech inside [a, b): s < b and e > a."""
    return any(s < b and e > a for s, e in segments)


def clipped(segments: Sequence[Segment], a: int, b: int) -> list[Segment]:
    """The parts of the segments inside [a, b), in order."""
    return [(max(s, a), min(e, b)) for s, e in sorted(segments) if s < b and e > a]
