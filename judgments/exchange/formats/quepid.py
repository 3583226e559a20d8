"""Quepid's judgment CSV as Quepid exports it today: ``query,docid,rating`` with float ratings.

Quepid (https://github.com/o19s/quepid, ``app/controllers/api/v1/export/ratings_controller.rb``) stores
ratings as floats, so its "basic" export writes ``star wars,3574597,3.0``. It also lists what has no
rating: a query without rated documents as ``star trek,,`` and, in the snapshot export, a document
without a rating as ``star wars,3557771,``. A query starting with ``- = + @`` gets a leading space
(against CSV formula injection), and the last line has no line feed. Its import reads the header
``query,docid,rating`` and matches queries by text.

:func:`parse_quepid_csv` reads that: a rating that is a whole number in any spelling (``3``, ``3.0``,
``3.00``) is the grade; a rating that is not a whole number, or not 0-4, is a problem naming its line
and field; rows without a rating are skipped and returned in ``unrated`` (so they can be counted).
:func:`write_quepid_csv` writes Quepid's export shape back (``3.0``, ``query,,``, the leading space),
through the one CSV writer (``spreadsheet.csv_line``), which also guards what Quepid's space does not
(a doc id starting with ``=``); the parser takes that apostrophe off again.

What the format cannot hold: query ids (only the query text; the caller matches or creates queries),
raters (the ratings of one case), can't-judge, notes, timestamps, fractional grades (refused here,
though Quepid stores floats), and leading/trailing spaces of a query text (Quepid pads some queries
with a space, so the parser strips them). Pure Python, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal

from judgments import limits

from .problems import (
    GRADES,
    MAX_CSV_QUERY_LENGTH,
    Reader,
    Stream,
    excerpt,
    gc_paused,
    id_problem,
    require_id,
)
from .read import iter_csv_rows
from .records import JudgmentCsvRecord
from .spreadsheet import csv_line, restore

HEADER = ("query", "docid", "rating")
_ALIASES = {"query": ("query",), "docid": ("docid", "doc_id"), "rating": ("rating",)}
# Quepid's make_csv_safe: a cell starting with one of these gets a leading space.
_FORMULA_START = ("-", "=", "+", "@")
_WHOLE = {f"{g}{tail}": g for g in GRADES for tail in ("", ".0")}  # the common spellings, looked up
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


@dataclass(slots=True)
class UnratedRow:
    """A row without a rating: a query with no rated document (``doc_id == ""``) or an unrated pair."""

    line: int
    query: str
    doc_id: str = ""


@dataclass(slots=True)
class QuepidCsvFile:
    records: list[JudgmentCsvRecord]  # the rated pairs; ``query`` is the query text as written (stripped)
    unrated: list[UnratedRow] = field(default_factory=list)  # rows without a rating, skipped

    def rows(self) -> list[tuple[str, str | None, int | None]]:
        """Every row in file order as ``(query, doc id or None, grade or None)``: what the writer takes."""
        merged = [(r.line, r.query, r.doc_id, r.grade) for r in self.records]
        merged += [(u.line, u.query, u.doc_id or None, None) for u in self.unrated]
        return [(q, d, g) for _, q, d, g in sorted(merged, key=lambda row: row[0])]


def parse_rating(cell: str) -> tuple[int | None, str | None]:
    """(grade, None) for a whole number 0-4 in any decimal spelling, else (None, why)."""
    text = cell.strip()
    fast = _WHOLE.get(text)
    if fast is not None:
        return fast, None
    if len(text) > 50 or not _NUMBER.match(text):
        return None, f"rating must be a number 0-4, got {excerpt(text)}"
    value = Decimal(text)
    if value < 0 or value > max(GRADES):
        hint = " (Quepid's scale has no distractor grade)" if value == -1 else ""
        return None, f"rating {text} is outside 0-4{hint}"
    if value != value.to_integral_value():
        return None, f"rating {text} is not a whole number (grades are the integers 0-4)"
    return int(value), None


def _columns(row: list[str]) -> dict[str, int] | None:
    names = [c.strip().lower() for c in row]
    found: dict[str, int] = {}
    for key, options in _ALIASES.items():
        idx = [i for i, n in enumerate(names) if n in options]
        if len(idx) == 1:
            found[key] = idx[0]
    return found if len(found) == 3 else None


@gc_paused
def parse_quepid_csv(stream: Stream, name: str = "<file>") -> QuepidCsvFile:
    """Quepid's ``query,docid,rating`` CSV (columns in any order and case, ``doc_id`` accepted, other
    columns ignored). A row may be shorter than the header (missing cells are empty).

    - ``query,docid,3`` / ``3.0``: a judgment; the rating must be a whole number 0-4.
    - ``query,docid,`` (unrated pair) and ``query,,`` (query without ratings): skipped, kept in
      ``unrated`` with their line.
    - ``query,,3`` (a rating without a document), an empty query, a bad doc id: problems.
    - The same (query, docid) rated twice: a problem if the ratings differ; a repeat is skipped.

    Raises FormatError (every problem, line and field) or returns the whole file."""
    problems = Reader(name)
    records: list[JudgmentCsvRecord] = []
    unrated: list[UnratedRow] = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    columns: dict[str, int] | None = None
    header_seen = False
    width = 0
    rows_seen = 0
    for lineno, row in iter_csv_rows(stream, problems):
        if not header_seen:
            header_seen = True
            columns = _columns(row)
            if columns is None:
                problems.add(
                    lineno,
                    "header",
                    f"header must name the columns query,docid,rating; got {excerpt(','.join(row), 120)}",
                )
                break  # rows cannot be read without knowing the columns
            width = len(row)
            continue
        assert columns is not None
        rows_seen += 1
        if len(row) > width:
            problems.add(
                lineno, "line", f"expected at most {width} columns like the header, found {len(row)}"
            )
            continue
        row = row + [""] * (width - len(row))
        query = restore(row[columns["query"]].strip())  # our writers' apostrophe against formulas
        docid = restore(row[columns["docid"]].strip())
        rating = row[columns["rating"]].strip()
        ok = True
        if not query:
            problems.add(lineno, "query", "query is empty")
            ok = False
        elif "\x00" in query or len(query) > MAX_CSV_QUERY_LENGTH:
            problems.add(
                lineno,
                "query",
                limits.too_long("query", query, MAX_CSV_QUERY_LENGTH) or "query contains a NUL character",
            )
            ok = False
        if docid:
            msg = id_problem(docid)
            if msg:
                problems.add(lineno, "docid", f"doc id {msg}")
                ok = False
        elif rating:
            problems.add(lineno, "docid", f"rating {excerpt(rating)} has no docid")
            ok = False
        grade = None
        if rating:
            grade, msg = parse_rating(rating)
            if msg:
                problems.add(lineno, "rating", msg)
                ok = False
        if not ok:
            continue
        if grade is None:
            unrated.append(UnratedRow(lineno, query, docid))
            continue
        key = (query, docid)
        first = seen.get(key)
        if first is not None:
            if first[1] != grade:
                problems.add(
                    lineno,
                    "rating",
                    f"query {excerpt(query)} doc {docid} is rated {first[1]} on line {first[0]} and {grade} here",
                )
            continue
        seen[key] = (lineno, grade)
        records.append(JudgmentCsvRecord(lineno, query, docid, grade))
    if not problems:
        if not header_seen:
            problems.add(0, "file", "file is empty (no " + "header and no judgments" + ")")
        elif not rows_seen:
            problems.add(0, "file", "file is empty (no " + "rows after the header" + ")")
    problems.raise_if_any(name)
    return QuepidCsvFile(records, unrated)


def quepid_cell(text: str) -> str:
    """A query text as Quepid writes it: a leading space before ``- = + @`` (its make_csv_safe)."""
    return " " + text if text.startswith(_FORMULA_START) else text


def check_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip() or query != query.strip() or "\x00" in query:
        raise ValueError(f"query must be a non-blank string without surrounding spaces, got {query!r}")
    if len(query) > MAX_CSV_QUERY_LENGTH:
        raise ValueError(f"query is longer than {MAX_CSV_QUERY_LENGTH} characters")
    return query


def write_quepid_csv(
    rows: Iterable[JudgmentCsvRecord | UnratedRow | tuple[str, str | None, int | None]],
) -> Iterator[str]:
    """Quepid's export shape: header ``query,docid,rating``, ratings as Quepid's floats (``3.0``).
    A row ``(query, None, None)`` is a query without ratings (``query,,``), ``(query, docid, None)``
    an unrated pair (``query,docid,``). Every line ends in a line feed (Quepid drops the last one;
    both read the same)."""
    yield csv_line(HEADER)
    for row in rows:
        if isinstance(row, JudgmentCsvRecord):
            query, docid, grade = row.query, row.doc_id, row.grade
        elif isinstance(row, UnratedRow):
            query, docid, grade = row.query, row.doc_id or None, None
        else:
            query, docid, grade = row
        check_query(query)
        if docid is None or docid == "":
            if grade is not None:
                raise ValueError(f"query {query!r}: a rating needs a doc id")
            docid = ""
        else:
            require_id(docid, "doc id")
        if grade is None:
            cell = ""
        elif isinstance(grade, bool) or grade not in GRADES:
            raise ValueError(f"rating must be an integer 0-4 or None, got {grade!r}")
        else:
            cell = f"{int(grade)}.0"
        yield csv_line([quepid_cell(query), docid, cell])
