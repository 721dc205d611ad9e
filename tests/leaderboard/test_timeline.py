"""The task page's timeline: its size depends on the number of spans, never on their values."""

import time

from evaluation.benchmarks.base import Timeline, TimelineLane, TimelineSpan
from leaderboard.selectors_submissions import timeline_layout


def layout(*ends: float) -> dict:
    spans = [TimelineSpan(max(0.0, end - 0.5), end, f"w{i}") for i, end in enumerate(ends)]
    return timeline_layout(
        Timeline(
            lanes=(
                TimelineLane("Conversation", tuple(spans[:1])),
                TimelineLane("Agent", tuple(spans[1:])),
            ),
            markers=((spans[0].end, "input ends"),),
        )
    )


def test_a_two_minute_conversation_ticks_every_fifteen_seconds():
    ticks = [tick["t"] for tick in layout(100.0, 124.5)["ticks"]]
    # 125 s / 15 s = 8.3 steps: 0, 15, ..., 120 (10 s would make 12.5 steps, over 12).
    assert ticks == [0, 15, 30, 45, 60, 75, 90, 105, 120]


def test_a_short_conversation_keeps_half_second_ticks():
    ticks = [tick["t"] for tick in layout(2.0, 2.5)["ticks"]]
    assert ticks == [0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]


def test_huge_timestamps_give_a_handful_of_ticks_at_once():
    started = time.monotonic()
    for end in (1e8, 1e12, 1.7e308 / 2):
        timeline = layout(10.0, end)
        assert 2 <= len(timeline["ticks"]) <= 13, end
        assert all(0 <= tick["left"] <= 100 for tick in timeline["ticks"])
    assert time.monotonic() - started < 0.5


def test_non_finite_duration_draws_no_timeline():
    assert layout(10.0, float("inf")) == {}


def test_a_lane_of_ten_thousand_spans_is_drawn_as_four_hundred_merged_ones():
    spans = tuple(TimelineSpan(i * 0.1, i * 0.1 + 0.05, f"w{i}") for i in range(10_000))
    laid = timeline_layout(Timeline(lanes=(TimelineLane("Agent", spans),)))
    drawn = laid["lanes"][0]["spans"]
    # 10,000 / 400 = 25 spans in each drawn one.
    assert len(drawn) == 400
    assert (drawn[0]["start"], drawn[0]["end"]) == (0.0, 24 * 0.1 + 0.05)
    assert drawn[0]["text"] == " ".join(f"w{i}" for i in range(25))[:60] + "… (25 spans)"
    assert drawn[-1]["end"] == 9_999 * 0.1 + 0.05
    # Under the bound, every span is drawn as it is.
    few = timeline_layout(Timeline(lanes=(TimelineLane("Agent", spans[:400]),)))
    assert [s["text"] for s in few["lanes"][0]["spans"]] == [f"w{i}" for i in range(400)]


def test_the_track_is_wide_enough_for_a_typical_word():
    # Ten words "hello", a quarter second each, one a second: 9.75 s drawn (the last ends at
    # 9.25, plus half a second). A chip of "hello" needs 5 x 6.5 + 4 = 36.5 px; a quarter second
    # of 9.75 s gets 36.5 px of a track 36.5 x 9.75 / 0.25 = 1423.5 px wide.
    spans = tuple(TimelineSpan(float(i), i + 0.25, "hello") for i in range(10))
    laid = timeline_layout(Timeline(lanes=(TimelineLane("Agent", spans),)))
    assert laid["min_width"] == 1424
    chip = laid["lanes"][0]["spans"][0]
    assert laid["min_width"] * chip["width"] / 100 >= 36.5
    # Whatever the times, the track stays within a lane of twelve-letter words (400 x 82 px).
    for end in (1e8, 1e12, 1.7e308 / 2):
        assert 0 <= layout(10.0, end)["min_width"] <= 32_800
