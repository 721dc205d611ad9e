"""Every CSV export writes text that a spreadsheet would run as a formula as text."""

from __future__ import annotations

import csv
import io

from evaluation.exports import csv_lines


def test_formula_leads_are_written_as_text_and_numbers_as_numbers():
    rows = [
        ['=HYPERLINK("http://x")', "+1", "-cmd", "@SUM(A1)", "\tx", "\rx"],
        [-0.5, 3, None, "a=b", "plain", ""],
    ]
    text = "".join(csv_lines(["=name", "b", "c", "d", "e", "f"], rows))
    read = list(csv.reader(io.StringIO(text, newline="")))
    assert read[0] == ["'=name", "b", "c", "d", "e", "f"]
    assert read[1] == ['\'=HYPERLINK("http://x")', "'+1", "'-cmd", "'@SUM(A1)", "'\tx", "'\rx"]
    assert read[2] == ["-0.5", "3", "", "a=b", "plain", ""]


def test_the_outcome_export_keeps_numbers_as_numbers():
    from leaderboard.views_records import _cell

    text = "".join(csv_lines(["x"], [[_cell(-0.5)], [_cell("-cmd")], [_cell(None)], [_cell(True)]]))
    # A row of one empty cell is written "" (the csv module's way to tell it from no row).
    assert text.splitlines() == ["x", "-0.5", "'-cmd", '""', "yes"]
