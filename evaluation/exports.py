"""CSV as every export of the site writes it: a line at a time, and with no cell that a
spreadsheet would run as a formula."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

# What a spreadsheet takes as the start of a formula in a text cell.
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """Text that a spreadsheet would run as a formula (a system name, a flag reason, a rater's
    note starting with = + - @, a tab or a carriage return) gets a leading apostrophe, which
    spreadsheets show as text; numbers, and all other values, are written as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS):
        return "'" + value
    return value


class _Line:
    def write(self, value: str) -> str:
        return value


def csv_lines(header: Iterable, rows: Iterable[Iterable]) -> Iterator[str]:
    """The header and then each row as one CSV line, for a streaming response."""
    writer = csv.writer(_Line())
    yield writer.writerow([csv_cell(cell) for cell in header])
    for row in rows:
        yield writer.writerow([csv_cell(cell) for cell in row])
