"""The field rules every format shares: the parsers' skeleton (Reader), id checks; Problem and FormatError
are the core's (judgments.problems), shared with the API and the capture wing."""

from __future__ import annotations

import functools
import gc
import math
import re
from collections.abc import Iterable
from typing import Any, Literal

from judgments import limits
from judgments.problems import MAX_PROBLEMS, FormatError, Problem
from judgments.scale import DISTRACTOR, GRADES

MAX_ID_LENGTH = limits.ID
MAX_URL_LENGTH = limits.URL
MAX_CSV_QUERY_LENGTH = limits.QUERY_TEXT  # every format's query text (judgments.limits)
# The distractor grade (a pool setting): TREC qrels, the per-rater CSV and JSON lines carry it; Quepid's
# CSV and RRE cannot (their scales start at 0). Whether a pool takes it is the importers' business.
JUDGMENT_GRADES = (DISTRACTOR, *GRADES)
JUDGMENT_GRADES_TEXT = "0-4 or -1 (a distractor)"  # what the parsers of those three formats accept
CANT_JUDGE = "X"
"""Cell value of the per-rater CSV for "can't judge"."""

Stream = bytes | bytearray | str | Iterable[bytes] | Iterable[str]
RaterCell = int | Literal["X"] | None


# --------------------------------------------------------------------------------------------------
# Problems


class Reader:
    """The skeleton every parser shares: one file being read, its problems, its records, the keys it has
    seen and its data lines. A parser reads its lines through one of the iterators of `read` (which
    count the data lines and record encoding and syntax problems here), records each field's problem
    with `add`, refuses a key seen before with `twice`, keeps a record with `keep`, and ends with
    `finish`, which either returns the records or raises FormatError with every problem.

    Problems: the first MAX_PROBLEMS are kept, the rest counted. Records are kept only while the file
    has no problem (a bad file is never partly returned). The hot loops of qrels and runs use the
    attributes directly (`items`, `records`, `seen`, `clash`) so a line costs no extra call."""

    __slots__ = ("name", "items", "cut", "first_cut_line", "records", "seen", "count")

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: list[Problem] = []
        self.cut = 0
        self.first_cut_line = 0
        self.records: list = []
        self.seen: dict = {}  # key -> the line it was first seen on
        self.count = 0  # data lines read, good or bad (set by the iterators of `read`)

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, line: int, field_: str, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(line, field_, message))
        else:
            if not self.cut:
                self.first_cut_line = line
            self.cut += 1

    def clash(self, first: int, line: int, field_: str, message: str) -> None:
        """The problem of something given a second time: ``<message> (lines <first> and <line>)``."""
        self.add(line, field_, f"{message} (lines {first} and {line})")

    def twice(self, key: Any, line: int, field_: str, message: str) -> bool:
        """True (and a problem recorded) if ``key`` was seen on an earlier line; else remember it."""
        first = self.seen.get(key)
        if first is not None:
            self.clash(first, line, field_, message)
            return True
        self.seen[key] = line
        return False

    def keep(self, record: Any) -> None:
        """Keep a good record, unless the file already has a problem (then nothing will be returned)."""
        if not self.items:
            self.records.append(record)

    def raise_if_any(self, name: str | None = None) -> None:
        """FormatError with every problem so far, if there is one (parsers that check a whole document,
        such as RRE's JSON, stop at the first stage that found problems)."""
        if self.items:
            if name is not None:
                self.name = name
            self.finish("records")

    def finish(self, what: str, nothing_kept: str | None = None) -> list:
        """The records, or FormatError with every problem. A file without data lines is empty (``file is
        empty (no <what>)``); ``nothing_kept`` is the problem of a file whose data lines kept nothing."""
        if not self.items:
            if not self.count:
                self.add(0, "file", f"file is empty (no {what})")
            elif nothing_kept is not None and not self.records:
                self.add(0, "file", nothing_kept)
        if not self.items:
            return self.records
        items = sorted(self.items, key=lambda p: p.line)
        if self.cut:
            more = f"{self.cut} more problem{'s' if self.cut != 1 else ''}"
            items.append(
                Problem(
                    self.first_cut_line,
                    "file",
                    f"too many problems: only the first {MAX_PROBLEMS} are listed, {more} from here on were cut",
                )
            )
        raise FormatError(self.name, items)


# --------------------------------------------------------------------------------------------------
# Shared checks

# Whitespace (str.isspace), control characters, zero-width space and a stray byte order mark
# (U+FEFF, e.g. from concatenated files): never allowed in ids.
BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u200b\ufeff]")
# In a whitespace-separated line (line ending removed): any whitespace but space and tab, any control
# character, U+200B and U+FEFF. trec_eval splits on spaces and tabs only, Python's str.split() on more.
BAD_LINE_CHAR = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\xa0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]"
)
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
GRADE_STRINGS = {str(g): g for g in JUDGMENT_GRADES}


def char_desc(s: str, m: re.Match) -> str:
    c = m.group()
    return f"U+{ord(c):04X} at position {m.start() + 1}"


def id_problem(value: Any, *, query: bool = False) -> str | None:
    """Why ``value`` is not a valid id, or None."""
    if not isinstance(value, str):
        return f"must be a string, got {json_type(value)}"
    if not value:
        return "is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long (at most {MAX_ID_LENGTH})"
    m = BAD_ID_CHAR.search(value)
    if m:
        c = m.group()
        what = (
            "whitespace"
            if c.isspace()
            else "an invisible character"
            if c in "\u200b\ufeff"
            else "a control character"
        )
        return f"{excerpt(value)} contains {what} ({char_desc(value, m)})"
    if query and value.startswith("#"):
        return f"{excerpt(value)} starts with '#' (it would be read as a comment line)"
    return None


def excerpt(value: str, limit: int = 60) -> str:
    if len(value) > limit:
        value = value[:limit] + "…"
    return repr(value)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def parse_int(s: str) -> int | None:
    """Strict integer: optional sign and ASCII digits only (no '1_0', no '١', no spaces)."""
    if len(s) > 50 or not _INT_RE.match(s):
        return None
    return int(s)


def format_number(value: Any) -> str:
    """An integer as an integer, anything else with the shortest round-tripping float text (2.5)."""
    if isinstance(value, bool) or isinstance(value, (str, bytes)):
        raise ValueError(f"grade must be a number, got {value!r}")
    if isinstance(value, int):
        return str(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"grade must be a number, got {value!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"grade must be a finite number, got {value!r}")
    if f.is_integer():
        return str(int(f))
    return repr(f)


def require_id(value: Any, what: str, *, query: bool = False) -> str:
    msg = id_problem(value, query=query)
    if msg:
        raise ValueError(f"{what} {msg}")
    return value


def gc_paused(fn):
    """Run a parser with the cyclic garbage collector paused: parsers allocate hundreds of thousands
    of small objects and no reference cycles, and the collector's repeated passes over them would
    double the time of a large file. Restores the previous state (never enables a disabled gc)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper
