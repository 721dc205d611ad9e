"""The board's rank cell: a rank and its plausible range are two things, to the eye and to a
screen reader ("1" over "certain", "1" over "1–3"; never "1certain" or "11–3")."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from leaderboard.selectors import Entry
from leaderboard.templatetags.scores import _rank_cell
from tests.conftest import REPO


def entry(rank, rank_range=None, **more) -> Entry:
    return Entry(
        rank=rank,
        system="S",
        system_type="",
        submission_id=1,
        judge="j",
        results={},
        verified=True,
        reported_in_paper=False,
        incomplete=False,
        offline_judge=False,
        rank_range=rank_range,
        **more,
    )


class Parts(HTMLParser):
    """The cell's text as read aloud (every text node), and the text of each class of span."""

    def __init__(self):
        super().__init__()
        self.spoken, self.by_class, self.open = [], {}, []

    def handle_starttag(self, tag, attrs):
        self.open.append(dict(attrs).get("class", ""))

    def handle_endtag(self, tag):
        self.open.pop()

    def handle_data(self, data):
        self.spoken.append(data)
        for name in self.open:
            self.by_class[name] = self.by_class.get(name, "") + data


def parts(cell: str) -> Parts:
    parsed = Parts()
    parsed.feed(cell)
    return parsed


@pytest.mark.parametrize(
    ("rank", "rank_range", "spoken", "shown_range"),
    [
        (1, (1, 1), "1, plausible rank certain", "certain"),
        (1, (1, 3), "1, plausible rank 1–3", "1–3"),
        (2, (1, 3), "2, plausible rank 1–3", "1–3"),
        (11, (10, 14), "11, plausible rank 10–14", "10–14"),
    ],
)
def test_a_rank_and_its_range_are_read_apart(rank, rank_range, spoken, shown_range):
    cell = parts(_rank_cell(entry(rank, rank_range)))
    assert "".join(cell.spoken) == spoken
    assert cell.by_class["rank-number"] == str(rank)
    assert cell.by_class["rank-range"].endswith(shown_range)
    # What is only for a screen reader is hidden from the eye; what is shown is on its own line.
    assert cell.by_class["visually-hidden"] == ", plausible rank "
    css = (REPO / "static" / "leaderboard" / "leaderboard.css").read_text()
    rule = re.search(r"#board td\.rank \.rank-range \{([^}]*)\}", css)
    assert rule and "display: block" in rule.group(1)


def test_a_rank_without_a_range_is_the_number_alone():
    assert "".join(parts(_rank_cell(entry(4))).spoken) == "4"
