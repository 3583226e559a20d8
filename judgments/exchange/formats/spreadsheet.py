"""CSV for spreadsheets: the one writer of every CSV file the app hands out, safe against formulas, and the
exact reverse for the CSV files it reads back. Pure Python.

A spreadsheet (Excel, LibreOffice, Google Sheets) runs a cell that starts with ``= + - @``, a tab or a
carriage return as a formula: a configuration named ``=HYPERLINK("https://evil", "click")`` or a query
``=cmd|' /C calc'!A0`` would run in an admin's spreadsheet. So the writer puts an apostrophe in front of
such a cell (OWASP's advice; spreadsheets show the cell as text, without the apostrophe). Numbers such as
``-0.031``, ``+3`` or ``-inf`` are left alone: they are no formula, and score files are read as numbers.

So that reading back is exact for every string, a cell made of apostrophes followed by such a start
(``'=x``, ``''-a``) gets one apostrophe more, and `restore` takes exactly one off a cell of that shape and
leaves every other cell alone: ``restore(neutralise(s)) == s`` for every string s, and a file from
elsewhere with a query such as ``'til tuesday`` is read as it is.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def _marked(text: str) -> bool:
    """True for apostrophes (any number, none included) followed by a formula start that is no number."""
    body = text.lstrip("'")
    return body.startswith(FORMULA_START) and not _NUMBER.fullmatch(body)


def neutralise(cell):
    """The cell as the writer stores it: strings of the shape above get a leading apostrophe; anything
    else (other strings, numbers, None) is returned as is."""
    if isinstance(cell, str) and _marked(cell):
        return "'" + cell
    return cell


def restore(cell: str) -> str:
    """The reverse of `neutralise` for a cell read from a CSV file."""
    if cell.startswith("'") and _marked(cell[1:]):
        return cell[1:]
    return cell


def csv_line(cells: Sequence) -> str:
    """One CSV line (ending in "\\n") with every cell neutralised; None is an empty cell. A cell holding a
    carriage return gets every cell quoted, so that no reader takes it for a line break."""
    values = ["" if cell is None else neutralise(cell) for cell in cells]
    quoting = csv.QUOTE_ALL if any(isinstance(v, str) and "\r" in v for v in values) else csv.QUOTE_MINIMAL
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n", quoting=quoting).writerow(values)
    return buffer.getvalue()


def csv_lines(rows: Iterable[Sequence]) -> Iterator[str]:
    """`csv_line` of every row."""
    for row in rows:
        yield csv_line(row)
