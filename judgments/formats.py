"""Reading and writing every file format the app exchanges, with precise, line-numbered errors.

Pure Python (no Django): the views, management commands and API call these functions.

Parsers
-------
Every parser takes a *stream*: a binary file (what Django's ``UploadedFile`` is), a text file, any
iterable of ``bytes`` or ``str`` lines, or a whole ``bytes``/``str`` document. It reads the stream line
by line, validates every field and collects every problem as a :class:`Problem` (1-based line, field,
message). After the *whole* file has been read it either returns the complete validated result or
raises :class:`FormatError` carrying the problems, so a caller never writes part of a bad file.
At most :data:`MAX_PROBLEMS` problems are kept; one last problem then says how many more were cut.
Problems about the file as a whole ("file is empty") have ``line == 0``.

Common rules: input is UTF-8 (a BOM at the start is tolerated; bad bytes are a problem with field
``"encoding"``); in the TREC and TSV formats blank lines and lines whose first non-blank character is
``#`` are skipped (so query ids may not start with ``#``); ids (query ids, doc ids, raters, run tags)
are 1-200 characters with no whitespace and no control characters.

Writers
-------
Writers are generators yielding ``str`` lines that end in ``"\\n"`` (ready for Django's
``StreamingHttpResponse``). They validate what they write with the parsers' rules and raise
``ValueError`` rather than produce a file that the parsers (or trec_eval) would read differently.
"""

from __future__ import annotations

import csv
import functools
import gc
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "MAX_PROBLEMS",
    "MAX_ID_LENGTH",
    "MAX_URL_LENGTH",
    "MAX_CSV_QUERY_LENGTH",
    "GRADES",
    "CANT_JUDGE",
    "Problem",
    "FormatError",
    "QrelRecord",
    "RunFile",
    "RunColumns",
    "QueryRecord",
    "DocumentRecord",
    "JudgmentCsvRecord",
    "RaterCsvRecord",
    "RaterCsvFile",
    "JudgmentJsonRecord",
    "parse_grade_map",
    "parse_qrels",
    "parse_run",
    "parse_run_columns",
    "parse_queries",
    "parse_queries_tsv",
    "parse_queries_jsonl",
    "parse_documents_jsonl",
    "parse_judgments_csv",
    "parse_rater_csv",
    "parse_judgments_jsonl",
    "write_qrels",
    "write_run",
    "write_ranklib",
    "write_trec_eval_q",
    "write_queries_tsv",
    "write_queries_jsonl",
    "write_documents_jsonl",
    "write_judgments_csv",
    "write_rater_csv",
    "write_judgments_jsonl",
]

MAX_PROBLEMS = 50
MAX_ID_LENGTH = 200
MAX_URL_LENGTH = 2000
MAX_CSV_QUERY_LENGTH = 10_000
GRADES = (0, 1, 2, 3, 4)
CANT_JUDGE = "X"
"""Cell value of the per-rater CSV for "can't judge"."""

Stream = bytes | bytearray | str | Iterable[bytes] | Iterable[str]
RaterCell = int | Literal["X"] | None


# --------------------------------------------------------------------------------------------------
# Problems


@dataclass(frozen=True, slots=True)
class Problem:
    line: int  # 1-based line number; 0 = the file as a whole
    field: str  # "grade", "docid", "score", "line", "encoding", "file", a JSON key, a CSV column...
    message: str

    def format(self, name: str) -> str:
        where = f"{name}:{self.line}" if self.line else name
        return f"{where}: {self.field}: {self.message}"


class FormatError(Exception):
    """A file had problems; ``problems`` lists them (at most MAX_PROBLEMS + 1), ``name`` is the file."""

    def __init__(self, name: str, problems: Sequence[Problem]):
        self.name = name
        self.problems = list(problems)
        super().__init__(name, self.problems)

    def __str__(self) -> str:
        return "\n".join(p.format(self.name) for p in self.problems)

    def __reduce__(self):
        return (type(self), (self.name, self.problems))


class _Problems:
    """Collects problems, keeping the first MAX_PROBLEMS and counting the rest."""

    __slots__ = ("items", "cut", "first_cut_line")

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.cut = 0
        self.first_cut_line = 0

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, line: int, field_: str, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(line, field_, message))
        else:
            if not self.cut:
                self.first_cut_line = line
            self.cut += 1

    def raise_if_any(self, name: str) -> None:
        if not self.items:
            return
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
        raise FormatError(name, items)


# --------------------------------------------------------------------------------------------------
# Records


@dataclass(slots=True)
class QrelRecord:
    line: int
    query_id: str
    doc_id: str
    grade: int


@dataclass(slots=True)
class RunFile:
    """A parsed TREC run: each query's doc ids in final order (queries in order of first appearance)."""

    rankings: dict[str, list[str]]
    tag: str  # the first run tag seen
    tags: list[str] = field(default_factory=list)  # every distinct tag, in order of first appearance

    @property
    def num_entries(self) -> int:
        return sum(len(docs) for docs in self.rankings.values())


@dataclass(slots=True)
class RunColumns:
    """A parsed TREC run as parallel columns, one entry per ranked document, in final order.

    Rows of one query are contiguous; ``ranks`` is the 1-based position in the final order,
    ``scores`` the score column as read, ``lines`` the line each entry came from.
    """

    query_ids: list[str]
    doc_ids: list[str]
    ranks: list[int]
    scores: list[float]
    lines: list[int]
    tag: str
    tags: list[str]

    def __len__(self) -> int:
        return len(self.doc_ids)


@dataclass(slots=True)
class QueryRecord:
    line: int
    query_id: str
    text: str
    information_need: str = ""


@dataclass(slots=True)
class DocumentRecord:
    line: int
    doc_id: str
    title: str = ""
    body: str = ""
    url: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class JudgmentCsvRecord:
    line: int
    query: str  # a query id or a query text: the caller decides
    doc_id: str
    grade: int


@dataclass(slots=True)
class RaterCsvRecord:
    line: int
    query_id: str
    doc_id: str
    grades: dict[str, RaterCell]  # every rater of the header: grade 0-4, "X" (can't judge) or None (no grade)


@dataclass(slots=True)
class RaterCsvFile:
    raters: list[str]
    rows: list[RaterCsvRecord]


@dataclass(slots=True)
class JudgmentJsonRecord:
    line: int
    query_id: str
    doc_id: str
    rater: str
    grade: int | None
    cant_judge: bool = False
    reason: str = ""
    note: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    final: bool = False


# --------------------------------------------------------------------------------------------------
# Shared checks

# Whitespace (str.isspace), control characters, zero-width space and a stray byte order mark
# (U+FEFF, e.g. from concatenated files): never allowed in ids.
_BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u200b\ufeff]")
# In a whitespace-separated line (line ending removed): any whitespace but space and tab, any control
# character, U+200B and U+FEFF. trec_eval splits on spaces and tabs only, Python's str.split() on more.
_BAD_LINE_CHAR = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\xa0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]"
)
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_GRADE_STRINGS = {str(g): g for g in GRADES}


def _char_desc(s: str, m: re.Match) -> str:
    c = m.group()
    return f"U+{ord(c):04X} at position {m.start() + 1}"


def _id_problem(value: Any, *, query: bool = False) -> str | None:
    """Why ``value`` is not a valid id, or None."""
    if not isinstance(value, str):
        return f"must be a string, got {_json_type(value)}"
    if not value:
        return "is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long (at most {MAX_ID_LENGTH})"
    m = _BAD_ID_CHAR.search(value)
    if m:
        c = m.group()
        what = (
            "whitespace"
            if c.isspace()
            else "an invisible character"
            if c in "\u200b\ufeff"
            else "a control character"
        )
        return f"{_show(value)} contains {what} ({_char_desc(value, m)})"
    if query and value.startswith("#"):
        return f"{_show(value)} starts with '#' (it would be read as a comment line)"
    return None


def _show(value: str, limit: int = 60) -> str:
    if len(value) > limit:
        value = value[:limit] + "…"
    return repr(value)


def _json_type(value: Any) -> str:
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


def _parse_int(s: str) -> int | None:
    """Strict integer: optional sign and ASCII digits only (no '1_0', no '١', no spaces)."""
    if len(s) > 50 or not _INT_RE.match(s):
        return None
    return int(s)


def _format_number(value: Any) -> str:
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


def _require_id(value: Any, what: str, *, query: bool = False) -> str:
    msg = _id_problem(value, query=query)
    if msg:
        raise ValueError(f"{what} {msg}")
    return value


def _gc_paused(fn):
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


# --------------------------------------------------------------------------------------------------
# Reading lines


def _as_iterable(stream: Stream) -> Iterable:
    if isinstance(stream, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(stream))
    if isinstance(stream, str):
        return io.StringIO(stream)
    return stream


def _decode_problem(raw: Any, lineno: int, problems: _Problems) -> str:
    """Decode a line that is not valid UTF-8 (or not bytes at all), recording the problem."""
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"a stream must yield bytes or str lines, got {type(raw).__name__}")
    raw = bytes(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.add(
            lineno,
            "encoding",
            f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line ({exc.reason})",
        )
        return raw.decode("utf-8", "replace")


def _iter_lines(stream: Stream, problems: _Problems, *, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, text without line ending) for every line; decoding problems are recorded and the
    line is still yielded (with U+FFFD replacements) so the rest of the file is checked too."""
    lineno = 0
    try:
        for raw in _as_iterable(stream):
            lineno += 1
            if isinstance(raw, str):
                text = raw
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = _decode_problem(raw, lineno, problems)
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, (text if keep_ends else text.rstrip("\r\n"))
    except UnicodeDecodeError as exc:  # a text stream that could not decode its input
        problems.add(
            lineno + 1, "encoding", f"not valid UTF-8 ({exc.reason}); the rest of the file was not read"
        )


def _iter_trec_fields(
    stream: Stream, problems: _Problems, width: int, layout: str, counter: list[int]
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every data line of a whitespace-separated TREC file with ``width``
    fields. Blank and '#' lines are skipped; ``counter[0]`` counts the data lines (good or bad).
    The loop is written out (not built on _iter_lines) because runs have 500,000+ lines."""
    bad_line = _BAD_LINE_CHAR.search
    lineno = 0
    try:
        for raw in _as_iterable(stream):
            lineno += 1
            if raw.__class__ is bytes:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = _decode_problem(raw, lineno, problems)
            elif isinstance(raw, str):
                text = raw
            else:
                text = _decode_problem(raw, lineno, problems)
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            fields = text.split()
            if not fields or fields[0][0] == "#":
                continue
            counter[0] += 1
            if len(fields) != width:
                problems.add(
                    lineno,
                    "line",
                    f"expected {width} whitespace-separated fields '{layout}', found {len(fields)}",
                )
                continue
            text = text.rstrip("\r\n")
            if bad_line(text):
                m = bad_line(text)
                problems.add(
                    lineno,
                    "line",
                    f"contains a control, invisible or non-ASCII whitespace character ({_char_desc(text, m)})",
                )
                continue
            yield lineno, fields
    except UnicodeDecodeError as exc:  # a text stream that could not decode its input
        problems.add(
            lineno + 1, "encoding", f"not valid UTF-8 ({exc.reason}); the rest of the file was not read"
        )


def _empty(problems: _Problems, what: str = "records") -> None:
    problems.add(0, "file", f"file is empty (no {what})")


# --------------------------------------------------------------------------------------------------
# Grade map


def parse_grade_map(text: str) -> dict[int, int | None]:
    """Parse ``"-2:0,-1:skip"`` into ``{-2: 0, -1: None}`` (None: skip lines with that grade).

    Sources are integers; targets are grades 0-4 or ``skip``. Raises ValueError with a clear message.
    """
    if not isinstance(text, str):
        raise ValueError(f"grade map must be a string, got {type(text).__name__}")
    result: dict[int, int | None] = {}
    if not text.strip():
        return result
    for n, entry in enumerate(text.split(","), 1):
        entry = entry.strip()
        if not entry:
            raise ValueError(f"grade map entry {n} is empty (expected 'grade:new_grade' or 'grade:skip')")
        if entry.count(":") != 1:
            raise ValueError(
                f"grade map entry {n} {entry!r} must look like 'grade:new_grade' or 'grade:skip'"
            )
        src_s, dst_s = (part.strip() for part in entry.split(":"))
        src = _parse_int(src_s)
        if src is None:
            raise ValueError(f"grade map entry {n} {entry!r}: {src_s!r} is not an integer grade")
        if src in result:
            raise ValueError(f"grade map entry {n} {entry!r}: grade {src} is mapped twice")
        if dst_s.lower() == "skip":
            result[src] = None
            continue
        dst = _parse_int(dst_s)
        if dst is None or dst not in GRADES:
            raise ValueError(f"grade map entry {n} {entry!r}: {dst_s!r} must be a grade 0-4 or 'skip'")
        result[src] = dst
    return result


def _check_grade_map(grade_map: Mapping[int, int | None]) -> dict[int, int | None]:
    checked: dict[int, int | None] = {}
    for src, dst in grade_map.items():
        if isinstance(src, bool) or not isinstance(src, int):
            raise ValueError(f"grade map keys must be integers, got {src!r}")
        if dst is not None and (isinstance(dst, bool) or dst not in GRADES):
            raise ValueError(f"grade map value for {src} must be a grade 0-4 or None (skip), got {dst!r}")
        checked[src] = dst
    return checked


# --------------------------------------------------------------------------------------------------
# TREC qrels


@_gc_paused
def parse_qrels(
    stream: Stream, name: str = "<file>", *, grade_map: Mapping[int, int | None] | None = None
) -> list[QrelRecord]:
    """TREC qrels ``qid iter docid grade``. Grades must be integers 0-4 unless ``grade_map`` maps them
    (a None target skips the line). A (qid, docid) twice is a problem."""
    gmap = _check_grade_map(grade_map) if grade_map else {}
    problems = _Problems()
    records: list[QrelRecord] = []
    seen: dict[tuple[str, str], int] = {}
    counter = [0]
    skipped = 0
    max_id = MAX_ID_LENGTH
    for lineno, (qid, _iter, docid, grade_s) in _iter_trec_fields(
        stream, problems, 4, "qid iter docid grade", counter
    ):
        ok = True
        # Whitespace and control characters were ruled out for the whole line.
        if len(qid) > max_id:
            problems.add(lineno, "qid", f"query id {_id_problem(qid, query=True)}")
            ok = False
        if len(docid) > max_id:
            problems.add(lineno, "docid", f"doc id {_id_problem(docid)}")
            ok = False
        grade = _GRADE_STRINGS.get(grade_s)
        skip = False
        if grade is None or (gmap and grade in gmap):
            value = _parse_int(grade_s)
            if value is not None and value in gmap:
                grade = gmap[value]
                skip = grade is None
            elif value is not None and value in GRADES:
                grade = value
            else:
                hint = "" if gmap else " (a grade map can translate other grades)"
                problems.add(lineno, "grade", f"grade must be an integer 0-4, got {_show(grade_s)}{hint}")
                ok = False
        if ok:
            key = (qid, docid)
            first = seen.get(key)
            if first is not None:
                problems.add(
                    lineno, "docid", f"query {qid} doc {docid} is judged twice (lines {first} and {lineno})"
                )
                continue
            seen[key] = lineno
            if skip:
                skipped += 1
            elif not problems:
                records.append(QrelRecord(lineno, qid, docid, grade))  # type: ignore[arg-type]
    if not problems:
        if not counter[0]:
            _empty(problems, "judgments")
        elif not records:
            problems.add(0, "file", f"no judgments left: all {skipped} lines were skipped by the grade map")
    problems.raise_if_any(name)
    return records


# --------------------------------------------------------------------------------------------------
# TREC run


def _read_run(stream: Stream, name: str, order: str) -> tuple[dict[str, list[tuple]], list[str]]:
    """Per query, entries ``(sort_key, docid, line, score)`` sorted into final order; and the tags."""
    if order not in ("score", "rank"):
        raise ValueError(f"order must be 'score' or 'rank', got {order!r}")
    by_rank = order == "rank"
    problems = _Problems()
    per_query: dict[str, list[tuple]] = {}
    seen_docs: dict[str, dict[str, int]] = {}
    seen_ranks: dict[str, dict[int, int]] = {}
    tags: dict[str, None] = {}
    last_tag = None
    counter = [0]
    max_id = MAX_ID_LENGTH
    for lineno, fields in _iter_trec_fields(stream, problems, 6, "qid Q0 docid rank score tag", counter):
        qid, _q0, docid, rank_s, score_s, tag = fields
        ok = True
        if len(qid) > max_id:
            problems.add(lineno, "qid", f"query id {_id_problem(qid, query=True)}")
            ok = False
        if len(docid) > max_id:
            problems.add(lineno, "docid", f"doc id {_id_problem(docid)}")
            ok = False
        if len(tag) > max_id:
            problems.add(lineno, "tag", f"run tag {_id_problem(tag)}")
            ok = False
        try:
            if "_" in rank_s or not rank_s.isascii():
                raise ValueError
            rank = int(rank_s)
        except ValueError:
            problems.add(lineno, "rank", f"rank must be an integer, got {_show(rank_s)}")
            ok = False
        try:
            if "_" in score_s or not score_s.isascii():
                raise ValueError
            score = float(score_s)
            if not -math.inf < score < math.inf:
                problems.add(lineno, "score", f"score must be a finite number, got {_show(score_s)}")
                ok = False
        except ValueError:
            problems.add(lineno, "score", f"score must be a number, got {_show(score_s)}")
            ok = False
        if not ok:
            continue
        if tag != last_tag:
            tags.setdefault(tag, None)
            last_tag = tag
        docs = seen_docs.get(qid)
        if docs is None:
            docs = seen_docs[qid] = {}
            per_query[qid] = []
            if by_rank:
                seen_ranks[qid] = {}
        first = docs.get(docid)
        if first is not None:
            problems.add(
                lineno,
                "docid",
                f"doc {docid} is ranked twice for query {qid} (lines {first} and {lineno})",
            )
            continue
        docs[docid] = lineno
        if by_rank:
            ranks = seen_ranks[qid]
            first = ranks.get(rank)
            if first is not None:
                problems.add(
                    lineno,
                    "rank",
                    f"rank {rank} is used twice for query {qid} (lines {first} and {lineno})",
                )
                continue
            ranks[rank] = lineno
            per_query[qid].append((rank, docid, lineno, score))
        else:
            per_query[qid].append((score, docid, lineno))
    if not problems and not counter[0]:
        _empty(problems, "ranked documents")
    problems.raise_if_any(name)
    del seen_docs, seen_ranks
    for entries in per_query.values():
        if by_rank:
            entries.sort()  # rank ascending (ranks are unique within a query)
        else:
            # trec_eval: score descending (as doubles), ties by docid descending (strcmp). Comparing
            # str code points is the same as comparing their UTF-8 bytes, and docids are unique.
            entries.sort(reverse=True)
    return per_query, list(tags)


@_gc_paused
def parse_run(stream: Stream, name: str = "<file>", *, order: Literal["score", "rank"] = "score") -> RunFile:
    """TREC run ``qid Q0 docid rank score tag``.

    ``order="score"`` (trec_eval's): score descending, equal scores by docid descending (byte order);
    the rank column must be an integer but is ignored. ``order="rank"``: rank ascending (a rank used
    twice in a query is a problem). A docid twice in a query is a problem naming both lines.
    """
    per_query, tags = _read_run(stream, name, order)
    rankings = {qid: [e[1] for e in entries] for qid, entries in per_query.items()}
    return RunFile(rankings=rankings, tag=tags[0], tags=tags)


@_gc_paused
def parse_run_columns(
    stream: Stream, name: str = "<file>", *, order: Literal["score", "rank"] = "score"
) -> RunColumns:
    """Like :func:`parse_run`, but returns flat parallel columns (for bulk inserts of large runs)."""
    per_query, tags = _read_run(stream, name, order)
    query_ids: list[str] = []
    doc_ids: list[str] = []
    ranks: list[int] = []
    scores: list[float] = []
    lines: list[int] = []
    score_at = 3 if order == "rank" else 0
    for qid, entries in per_query.items():
        n = len(entries)
        query_ids.extend([qid] * n)
        ranks.extend(range(1, n + 1))
        doc_ids.extend([e[1] for e in entries])
        lines.extend([e[2] for e in entries])
        scores.extend([e[score_at] for e in entries])
    return RunColumns(query_ids, doc_ids, ranks, scores, lines, tags[0], tags)


# --------------------------------------------------------------------------------------------------
# JSON lines helpers


class _DuplicateKey(ValueError):
    pass


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {key!r} appears twice in one object")
            seen.add(key)
    return obj


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


def _iter_json_objects(stream: Stream, problems: _Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every non-blank line parsed as a JSON object; bad lines are recorded as problems."""
    for lineno, text in _iter_lines(stream, problems):
        if not text.strip():
            continue
        try:
            obj = json.loads(text, object_pairs_hook=_object_pairs, parse_constant=_reject_constant)
        except _DuplicateKey as exc:
            problems.add(lineno, "json", str(exc))
            continue
        except json.JSONDecodeError as exc:
            problems.add(lineno, "json", f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:
            problems.add(lineno, "json", f"invalid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            problems.add(lineno, "json", f"each line must be a JSON object, got {_json_type(obj)}")
            continue
        yield lineno, obj


def _json_id(obj: Mapping[str, Any], key: str, *, query: bool = False) -> tuple[str | None, str | None]:
    """(id, None) or (None, problem). Integer ids are accepted and turned into strings."""
    if key not in obj or obj[key] is None:
        return None, f"{key} is missing"
    value = obj[key]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    msg = _id_problem(value, query=query)
    if msg:
        return None, f"{key} {msg}"
    return value, None


def _json_text(obj: Mapping[str, Any], key: str, *, required: bool = False) -> tuple[str, str | None]:
    value = obj.get(key)
    if value is None:
        if required:
            return "", f"{key} is missing"
        return "", None
    if not isinstance(value, str):
        return "", f"{key} must be a string, got {_json_type(value)}"
    if "\x00" in value:
        return "", f"{key} contains a NUL character"
    if required and not value.strip():
        return "", f"{key} is empty"
    return value, None


def _dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"


# --------------------------------------------------------------------------------------------------
# Queries


def _query_text_problem(text: Any) -> str | None:
    if not isinstance(text, str):
        return f"query text must be a string, got {_json_type(text)}"
    if not text.strip():
        return "query text is empty"
    if "\x00" in text:
        return "query text contains a NUL character"
    return None


@_gc_paused
def parse_queries_tsv(stream: Stream, name: str = "<file>") -> list[QueryRecord]:
    """Queries as ``qid<TAB>text`` lines (exactly one tab). Duplicate ids are a problem."""
    problems = _Problems()
    records: list[QueryRecord] = []
    seen: dict[str, int] = {}
    data_lines = 0
    for lineno, text in _iter_lines(stream, problems):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        data_lines += 1
        parts = text.split("\t")
        if len(parts) != 2:
            if len(parts) == 1:
                problems.add(lineno, "line", "expected 'query_id<TAB>text': no tab found")
            else:
                problems.add(
                    lineno, "line", f"expected 2 tab-separated fields 'query_id<TAB>text', found {len(parts)}"
                )
            continue
        qid, qtext = parts
        ok = True
        msg = _id_problem(qid, query=True)
        if msg:
            problems.add(lineno, "qid", f"query id {msg}")
            ok = False
        msg = _query_text_problem(qtext)
        if msg:
            problems.add(lineno, "text", msg)
            ok = False
        if not ok:
            continue
        first = seen.get(qid)
        if first is not None:
            problems.add(lineno, "qid", f"query id {qid} appears twice (lines {first} and {lineno})")
            continue
        seen[qid] = lineno
        if not problems:
            records.append(QueryRecord(lineno, qid, qtext, ""))
    if not problems and not data_lines:
        _empty(problems, "queries")
    problems.raise_if_any(name)
    return records


@_gc_paused
def parse_queries_jsonl(stream: Stream, name: str = "<file>") -> list[QueryRecord]:
    """Queries as JSON lines ``{"id", "text", "information_need"?}``; other keys are ignored."""
    problems = _Problems()
    records: list[QueryRecord] = []
    seen: dict[str, int] = {}
    count = 0
    for lineno, obj in _iter_json_objects(stream, problems):
        count += 1
        ok = True
        qid, msg = _json_id(obj, "id", query=True)
        if msg:
            problems.add(lineno, "id", msg)
            ok = False
        text = obj.get("text")
        if "text" not in obj:
            problems.add(lineno, "text", "text is missing")
            ok = False
        else:
            msg = _query_text_problem(text)
            if msg:
                problems.add(lineno, "text", msg)
                ok = False
        need, msg = _json_text(obj, "information_need")
        if msg:
            problems.add(lineno, "information_need", msg)
            ok = False
        if not ok:
            continue
        first = seen.get(qid)  # type: ignore[arg-type]
        if first is not None:
            problems.add(lineno, "id", f"query id {qid} appears twice (lines {first} and {lineno})")
            continue
        seen[qid] = lineno  # type: ignore[index]
        if not problems:
            records.append(QueryRecord(lineno, qid, text, need))  # type: ignore[arg-type]
    if not problems and not count:
        _empty(problems, "queries")
    problems.raise_if_any(name)
    return records


@_gc_paused
def parse_queries(stream: Stream, name: str = "<file>") -> list[QueryRecord]:
    """Queries in either format: JSON lines if the first non-blank character is ``{``, else TSV."""
    it = iter(_as_iterable(stream))
    head: list = []
    is_json = False
    try:
        for raw in it:
            head.append(raw)
            text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8", "replace")
            text = text.lstrip("\ufeff").strip()
            if text:
                is_json = text.startswith("{")
                break
    except UnicodeDecodeError as exc:  # a text stream that could not decode its input
        message = f"not valid UTF-8 ({exc.reason}); the rest of the file was not read"
        raise FormatError(name, [Problem(len(head) + 1, "encoding", message)]) from None

    def chained() -> Iterator:
        yield from head
        yield from it

    parser = parse_queries_jsonl if is_json else parse_queries_tsv
    return parser(chained(), name)


def _query_tuple(record: Any) -> tuple[Any, Any, Any]:
    if isinstance(record, QueryRecord):
        return record.query_id, record.text, record.information_need
    record = tuple(record)
    if len(record) == 2:
        return record[0], record[1], ""
    if len(record) == 3:
        return record[0], record[1], record[2]
    raise ValueError(f"a query must be a QueryRecord or (query_id, text[, information_need]), got {record!r}")


def write_queries_tsv(records: Iterable[QueryRecord | tuple]) -> Iterator[str]:
    """``qid<TAB>text`` lines. The information need is not part of this format (use JSON lines).
    A text containing a tab or line break cannot be written (ValueError)."""
    for record in records:
        qid, text, _need = _query_tuple(record)
        _require_id(qid, "query id", query=True)
        msg = _query_text_problem(text)
        if msg:
            raise ValueError(f"query {qid}: {msg}")
        if "\t" in text or "\n" in text or "\r" in text:
            raise ValueError(
                f"query {qid}: text contains a tab or line break, which TSV cannot hold (use JSON lines)"
            )
        yield f"{qid}\t{text}\n"


def write_queries_jsonl(records: Iterable[QueryRecord | tuple]) -> Iterator[str]:
    """``{"id", "text", "information_need"}`` per line."""
    for record in records:
        qid, text, need = _query_tuple(record)
        _require_id(qid, "query id", query=True)
        msg = _query_text_problem(text)
        if msg:
            raise ValueError(f"query {qid}: {msg}")
        if need is None:
            need = ""
        if not isinstance(need, str) or "\x00" in need:
            raise ValueError(f"query {qid}: information_need must be a string without NUL characters")
        yield _dumps({"id": qid, "text": text, "information_need": need})


# --------------------------------------------------------------------------------------------------
# Documents

_DOC_KEYS = ("id", "title", "body", "url")
_URL_SCHEMES = ("http://", "https://", "ftp://", "ftps://")


def _url_problem(url: str) -> str | None:
    if not url:
        return None
    if len(url) > MAX_URL_LENGTH:
        return f"url is {len(url)} characters long (at most {MAX_URL_LENGTH})"
    if not url.lower().startswith(_URL_SCHEMES):
        return f"url {_show(url)} must start with http://, https://, ftp:// or ftps://"
    m = _BAD_ID_CHAR.search(url)
    if m:
        return f"url {_show(url)} contains whitespace or a control character ({_char_desc(url, m)})"
    return None


def _document_from_obj(
    obj: Mapping[str, Any], lineno: int
) -> tuple[DocumentRecord | None, list[tuple[str, str]]]:
    errors: list[tuple[str, str]] = []
    doc_id, msg = _json_id(obj, "id")
    if msg:
        errors.append(("id", msg))
    values = {}
    for key in ("title", "body", "url"):
        values[key], msg = _json_text(obj, key)
        if msg:
            errors.append((key, msg))
    if not errors:
        msg = _url_problem(values["url"])
        if msg:
            errors.append(("url", msg))
    if errors:
        return None, errors
    extra = {k: v for k, v in obj.items() if k not in _DOC_KEYS}
    return DocumentRecord(lineno, doc_id, values["title"], values["body"], values["url"], extra), []  # type: ignore[arg-type]


@_gc_paused
def parse_documents_jsonl(stream: Stream, name: str = "<file>") -> list[DocumentRecord]:
    """Documents as JSON lines ``{"id", "title"?, "body"?, "url"?, ...}``; other keys go to ``extra``.
    title/body/url must be strings if present (null counts as absent). Duplicate ids are a problem."""
    problems = _Problems()
    records: list[DocumentRecord] = []
    seen: dict[str, int] = {}
    count = 0
    for lineno, obj in _iter_json_objects(stream, problems):
        count += 1
        record, errors = _document_from_obj(obj, lineno)
        for key, msg in errors:
            problems.add(lineno, key, msg)
        if record is None:
            continue
        first = seen.get(record.doc_id)
        if first is not None:
            problems.add(lineno, "id", f"doc id {record.doc_id} appears twice (lines {first} and {lineno})")
            continue
        seen[record.doc_id] = lineno
        if not problems:
            records.append(record)
    if not problems and not count:
        _empty(problems, "documents")
    problems.raise_if_any(name)
    return records


def write_documents_jsonl(records: Iterable[DocumentRecord]) -> Iterator[str]:
    """``{"id", "title", "body", "url", **extra}`` per line."""
    for record in records:
        extra = record.extra or {}
        clash = [k for k in extra if k in _DOC_KEYS]
        if clash:
            raise ValueError(f"document {record.doc_id}: extra may not contain the keys {clash}")
        obj = {"id": record.doc_id, "title": record.title, "body": record.body, "url": record.url, **extra}
        _, errors = _document_from_obj(obj, 0)
        if errors:
            raise ValueError(f"document {record.doc_id!r}: {errors[0][1]}")
        yield _dumps(obj)


# --------------------------------------------------------------------------------------------------
# CSV helpers


def _iter_csv_rows(stream: Stream, problems: _Problems) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, cells) for every non-blank CSV record."""
    line_holder = [0]

    def feed() -> Iterator[str]:
        for lineno, text in _iter_lines(stream, problems, keep_ends=True):
            line_holder[0] = lineno
            yield text

    reader = csv.reader(feed(), strict=True)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.add(start, "csv", f"invalid CSV: {exc}")
            start = line_holder[0] + 1
            continue
        if row and any(cell.strip() for cell in row):
            yield start, row
        start = line_holder[0] + 1


def _csv_line(cells: Sequence[str]) -> str:
    buf = io.StringIO()
    quoting = csv.QUOTE_ALL if any("\r" in c for c in cells) else csv.QUOTE_MINIMAL
    csv.writer(buf, lineterminator="\n", quoting=quoting).writerow(cells)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------------
# Quepid CSV


def _grade_cell(cell: str) -> int | None:
    return _GRADE_STRINGS.get(cell.strip())


@_gc_paused
def parse_judgments_csv(stream: Stream, name: str = "<file>") -> list[JudgmentCsvRecord]:
    """Quepid-style CSV with a header naming the columns ``query``, ``docid`` (or ``doc_id``) and
    ``rating`` (any order, any case; other columns ignored). Ratings are integers 0-4 (empty is a
    problem). ``query`` is returned stripped; it may be a query id or a query text."""
    problems = _Problems()
    records: list[JudgmentCsvRecord] = []
    seen: dict[tuple[str, str], int] = {}
    columns: dict[str, int] | None = None
    header_seen = False
    width = 0
    for lineno, row in _iter_csv_rows(stream, problems):
        if not header_seen:
            header_seen = True
            names = [c.strip().lower() for c in row]
            aliases = {"query": ("query",), "docid": ("docid", "doc_id"), "rating": ("rating",)}
            found: dict[str, int] = {}
            for key, options in aliases.items():
                idx = [i for i, n in enumerate(names) if n in options]
                if len(idx) == 1:
                    found[key] = idx[0]
            if len(found) != 3:
                problems.add(
                    lineno,
                    "header",
                    f"header must name the columns query,docid,rating; got {_show(','.join(row), 120)}",
                )
                break  # rows cannot be read without knowing the columns
            columns = found
            width = len(row)
            continue
        assert columns is not None
        if len(row) != width:
            problems.add(lineno, "line", f"expected {width} columns like the header, found {len(row)}")
            continue
        query = row[columns["query"]].strip()
        docid = row[columns["docid"]].strip()
        rating = row[columns["rating"]]
        ok = True
        if not query:
            problems.add(lineno, "query", "query is empty")
            ok = False
        elif "\x00" in query or len(query) > MAX_CSV_QUERY_LENGTH:
            problems.add(
                lineno, "query", f"query contains a NUL character or is longer than {MAX_CSV_QUERY_LENGTH}"
            )
            ok = False
        msg = _id_problem(docid)
        if msg:
            problems.add(lineno, "docid", f"doc id {msg}")
            ok = False
        grade = _grade_cell(rating)
        if grade is None:
            what = "empty" if not rating.strip() else _show(rating)
            problems.add(lineno, "rating", f"rating must be an integer 0-4, got {what}")
            ok = False
        if not ok:
            continue
        key = (query, docid)
        first = seen.get(key)
        if first is not None:
            problems.add(
                lineno,
                "docid",
                f"query {_show(query)} doc {docid} is rated twice (lines {first} and {lineno})",
            )
            continue
        seen[key] = lineno
        if not problems:
            records.append(JudgmentCsvRecord(lineno, query, docid, grade))  # type: ignore[arg-type]
    if not problems:
        if not header_seen:
            _empty(problems, "header and no judgments")
        elif not records:
            _empty(problems, "judgments after the header")
    problems.raise_if_any(name)
    return records


def write_judgments_csv(rows: Iterable[JudgmentCsvRecord | tuple[str, str, int]]) -> Iterator[str]:
    """Quepid-style ``query,docid,rating`` CSV with its header."""
    yield "query,docid,rating\n"
    for row in rows:
        if isinstance(row, JudgmentCsvRecord):
            query, docid, grade = row.query, row.doc_id, row.grade
        else:
            query, docid, grade = row
        if not isinstance(query, str) or not query.strip() or query != query.strip() or "\x00" in query:
            raise ValueError(f"query must be a non-blank string without surrounding spaces, got {query!r}")
        if len(query) > MAX_CSV_QUERY_LENGTH:
            raise ValueError(f"query is longer than {MAX_CSV_QUERY_LENGTH} characters")
        _require_id(docid, "doc id")
        if isinstance(grade, bool) or grade not in GRADES:
            raise ValueError(f"rating must be an integer 0-4, got {grade!r}")
        yield _csv_line([query, docid, str(grade)])


# --------------------------------------------------------------------------------------------------
# Per-rater CSV


def _rater_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str) and value.upper() == CANT_JUDGE:
        return CANT_JUDGE
    if isinstance(value, bool) or value not in GRADES:
        raise ValueError(f"a rater cell must be a grade 0-4, 'X' or None, got {value!r}")
    return str(value)


@_gc_paused
def parse_rater_csv(stream: Stream, name: str = "<file>") -> RaterCsvFile:
    """Per-rater CSV: header ``query_id,doc_id,<rater>...``; each cell a grade 0-4, empty (no grade)
    or ``X`` (can't judge; ``x`` accepted). Every row's ``grades`` has every rater of the header."""
    problems = _Problems()
    rows: list[RaterCsvRecord] = []
    seen: dict[tuple[str, str], int] = {}
    raters: list[str] | None = None
    header_seen = False
    for lineno, row in _iter_csv_rows(stream, problems):
        if not header_seen:
            header_seen = True
            cells = [c.strip() for c in row]
            if len(cells) < 2 or cells[0].lower() != "query_id" or cells[1].lower() != "doc_id":
                problems.add(
                    lineno,
                    "header",
                    f"header must start with query_id,doc_id; got {_show(','.join(row), 120)}",
                )
                break
            raters = cells[2:]
            bad = False
            for i, rater in enumerate(raters):
                msg = _id_problem(rater)
                if msg:
                    problems.add(lineno, "header", f"rater name in column {i + 3} {msg}")
                    bad = True
                elif rater in raters[:i] or rater.lower() in ("query_id", "doc_id"):
                    problems.add(lineno, "header", f"rater {rater} appears twice in the header")
                    bad = True
            if bad:
                break
            continue
        assert raters is not None
        if len(row) != len(raters) + 2:
            problems.add(
                lineno, "line", f"expected {len(raters) + 2} columns like the header, found {len(row)}"
            )
            continue
        qid, docid = row[0].strip(), row[1].strip()
        ok = True
        msg = _id_problem(qid, query=True)
        if msg:
            problems.add(lineno, "query_id", f"query id {msg}")
            ok = False
        msg = _id_problem(docid)
        if msg:
            problems.add(lineno, "doc_id", f"doc id {msg}")
            ok = False
        grades: dict[str, RaterCell] = {}
        for rater, cell in zip(raters, row[2:], strict=True):
            cell = cell.strip()
            if not cell:
                grades[rater] = None
            elif cell.upper() == CANT_JUDGE:
                grades[rater] = CANT_JUDGE
            else:
                grade = _GRADE_STRINGS.get(cell)
                if grade is None:
                    problems.add(
                        lineno, rater, f"grade of {rater} must be 0-4, empty or X, got {_show(cell)}"
                    )
                    ok = False
                grades[rater] = grade
        if not ok:
            continue
        key = (qid, docid)
        first = seen.get(key)
        if first is not None:
            problems.add(
                lineno, "doc_id", f"query {qid} doc {docid} appears twice (lines {first} and {lineno})"
            )
            continue
        seen[key] = lineno
        if not problems:
            rows.append(RaterCsvRecord(lineno, qid, docid, grades))
    if not problems:
        if not header_seen:
            _empty(problems, "header and no rows")
        elif not rows:
            _empty(problems, "rows after the header")
    problems.raise_if_any(name)
    return RaterCsvFile(raters=raters or [], rows=rows)


def write_rater_csv(
    raters: Sequence[str], rows: Iterable[tuple[str, str, Mapping[str, RaterCell]]]
) -> Iterator[str]:
    """Per-rater CSV: header ``query_id,doc_id,<raters>``, then one row per pair. A rater missing
    from a row's mapping gets an empty cell; a rater not in ``raters`` is an error."""
    raters = list(raters)
    for i, rater in enumerate(raters):
        _require_id(rater, "rater name")
        if rater in raters[:i] or rater.lower() in ("query_id", "doc_id"):
            raise ValueError(f"rater {rater} appears twice in the header")
    known = set(raters)
    yield _csv_line(["query_id", "doc_id", *raters])
    for qid, docid, grades in rows:
        _require_id(qid, "query id", query=True)
        _require_id(docid, "doc id")
        unknown = [r for r in grades if r not in known]
        if unknown:
            raise ValueError(f"query {qid} doc {docid}: grades of raters not in the header: {unknown}")
        yield _csv_line([qid, docid, *(_rater_cell(grades.get(r)) for r in raters)])


# --------------------------------------------------------------------------------------------------
# Judgments JSON lines

_JUDGMENT_KEYS = (
    "query_id",
    "doc_id",
    "rater",
    "grade",
    "cant_judge",
    "reason",
    "note",
    "created_at",
    "updated_at",
    "final",
)


def _timestamp(obj: Mapping[str, Any], key: str) -> tuple[datetime | None, str | None]:
    value = obj.get(key)
    if value is None:
        return None, None
    if not isinstance(value, str):
        return None, f"{key} must be an ISO 8601 string, got {_json_type(value)}"
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None, f"{key} {_show(value)} is not an ISO 8601 timestamp"
    if dt.tzinfo is None or dt.utcoffset() is None:
        return None, f"{key} {_show(value)} has no timezone (add Z or +00:00)"
    return dt, None


def _judgment_from_obj(
    obj: Mapping[str, Any], lineno: int
) -> tuple[JudgmentJsonRecord | None, list[tuple[str, str]]]:
    errors: list[tuple[str, str]] = []
    qid, msg = _json_id(obj, "query_id", query=True)
    if msg:
        errors.append(("query_id", msg))
    docid, msg = _json_id(obj, "doc_id")
    if msg:
        errors.append(("doc_id", msg))
    rater = obj.get("rater")
    if rater is None:
        errors.append(("rater", "rater is missing"))
    else:
        msg = _id_problem(rater)
        if msg:
            errors.append(("rater", f"rater {msg}"))
    cant_judge = obj.get("cant_judge", False)
    if cant_judge is None:
        cant_judge = False
    if not isinstance(cant_judge, bool):
        errors.append(("cant_judge", f"cant_judge must be true or false, got {_json_type(cant_judge)}"))
        cant_judge = None
    final = obj.get("final", False)
    if final is None:
        final = False
    if not isinstance(final, bool):
        errors.append(("final", f"final must be true or false, got {_json_type(final)}"))
    reason, msg = _json_text(obj, "reason")
    if msg:
        errors.append(("reason", msg))
    note, msg = _json_text(obj, "note")
    if msg:
        errors.append(("note", msg))
    if "grade" not in obj:
        errors.append(("grade", "grade is missing (use null with cant_judge true)"))
        grade = None
    else:
        grade = obj["grade"]
        if grade is not None and (
            isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES
        ):
            shown = (
                json.dumps(grade, ensure_ascii=False)
                if isinstance(grade, (int, float, str, bool))
                else _json_type(grade)
            )
            errors.append(("grade", f"grade must be an integer 0-4 or null, got {_show(shown)}"))
        elif cant_judge is not None:
            if cant_judge and grade is not None:
                errors.append(("grade", "grade must be null when cant_judge is true"))
            elif not cant_judge and grade is None:
                errors.append(("grade", "grade is null but cant_judge is not true"))
    if cant_judge and not reason.strip() and not any(k == "reason" for k, _ in errors):
        errors.append(("reason", "cant_judge needs a non-empty reason"))
    created_at, msg = _timestamp(obj, "created_at")
    if msg:
        errors.append(("created_at", msg))
    updated_at, msg = _timestamp(obj, "updated_at")
    if msg:
        errors.append(("updated_at", msg))
    if errors:
        return None, errors
    record = JudgmentJsonRecord(
        lineno,
        qid,
        docid,
        rater,
        grade,
        cant_judge,
        reason,
        note,
        created_at,
        updated_at,
        final,  # type: ignore[arg-type]
    )
    return record, []


@_gc_paused
def parse_judgments_jsonl(stream: Stream, name: str = "<file>") -> list[JudgmentJsonRecord]:
    """One judgment per line: ``{"query_id", "doc_id", "rater", "grade" (0-4 or null),
    "cant_judge"?, "reason"?, "note"?, "created_at"?, "updated_at"?, "final"?}``.

    grade is null exactly when cant_judge is true, which needs a non-empty reason; timestamps are
    ISO 8601 with a timezone (null or absent: unknown). A (query_id, doc_id, rater) twice is a problem,
    and so is a second ``"final": true`` record (an adjudicated grade) for a pair; a final record does
    not clash with the same rater's own judgment. Unknown keys are ignored."""
    problems = _Problems()
    records: list[JudgmentJsonRecord] = []
    seen: dict[tuple[str, str, str], int] = {}
    count = 0
    for lineno, obj in _iter_json_objects(stream, problems):
        count += 1
        record, errors = _judgment_from_obj(obj, lineno)
        for key, msg in errors:
            problems.add(lineno, key, msg)
        if record is None:
            continue
        # A rater judges a pair once; a pair has at most one final (adjudicated) grade, whoever gave it.
        key3 = (record.query_id, record.doc_id, "" if record.final else record.rater)
        first = seen.get(key3)
        if first is not None:
            if record.final:
                message = f"query {record.query_id} doc {record.doc_id} has two final grades"
            else:
                message = f"{record.rater} judged query {record.query_id} doc {record.doc_id} twice"
            problems.add(
                lineno, "final" if record.final else "rater", f"{message} (lines {first} and {lineno})"
            )
            continue
        seen[key3] = lineno
        if not problems:
            records.append(record)
    if not problems and not count:
        _empty(problems, "judgments")
    problems.raise_if_any(name)
    return records


def write_judgments_jsonl(records: Iterable[JudgmentJsonRecord]) -> Iterator[str]:
    """One JSON object per judgment with every key of :func:`parse_judgments_jsonl`."""
    for r in records:
        for key in ("created_at", "updated_at"):
            value = getattr(r, key)
            if value is not None and (not isinstance(value, datetime) or value.utcoffset() is None):
                raise ValueError(f"{key} must be a timezone-aware datetime or None, got {value!r}")
        obj = {
            "query_id": r.query_id,
            "doc_id": r.doc_id,
            "rater": r.rater,
            "grade": r.grade,
            "cant_judge": r.cant_judge,
            "reason": r.reason,
            "note": r.note,
            "created_at": r.created_at.isoformat() if r.created_at else None,
            "updated_at": r.updated_at.isoformat() if r.updated_at else None,
            "final": r.final,
        }
        _, errors = _judgment_from_obj(obj, 0)
        if errors:
            raise ValueError(
                f"judgment {r.query_id!r}/{r.doc_id!r} by {r.rater!r}: {errors[0][0]}: {errors[0][1]}"
            )
        yield _dumps(obj)


# --------------------------------------------------------------------------------------------------
# TREC writers


def write_qrels(rows: Iterable[tuple[str, str, Any]], *, header: str | None = None) -> Iterator[str]:
    """``qid 0 docid grade`` lines. A grade is printed as an integer when integral, else as the
    shortest float text (2.5). ``header`` (only when given) becomes ``# `` comment lines first —
    trec_eval 10 skips them, but pytrec_eval and ir_measures do not read comments."""
    if header is not None:
        for line in header.splitlines() or [""]:
            yield f"# {line}".rstrip() + "\n"
    for qid, docid, grade in rows:
        _require_id(qid, "query id", query=True)
        _require_id(docid, "doc id")
        yield f"{qid} 0 {docid} {_format_number(grade)}\n"


def write_run(rankings: Iterable[tuple[str, Sequence[str]]], tag: str) -> Iterator[str]:
    """``qid Q0 docid rank score tag`` lines; rank 1..n and score n..1 (integers, strictly decreasing),
    so trec_eval's score sort reproduces exactly the given order. Empty rankings write nothing.
    A query given twice or a doc twice in a ranking is an error."""
    _require_id(tag, "run tag")
    seen_queries: set[str] = set()
    for qid, docids in rankings:
        _require_id(qid, "query id", query=True)
        if qid in seen_queries:
            raise ValueError(f"query {qid} is given twice")
        seen_queries.add(qid)
        if isinstance(docids, str):
            raise ValueError(f"query {qid}: the ranking must be a sequence of doc ids, not a string")
        docids = list(docids)
        if len(set(docids)) != len(docids):
            raise ValueError(f"query {qid}: the ranking has a doc id twice")
        n = len(docids)
        for i, docid in enumerate(docids):
            _require_id(docid, "doc id")
            yield f"{qid} Q0 {docid} {i + 1} {n - i} {tag}\n"


def write_ranklib(rows: Iterable[tuple[Any, int, str, str]]) -> Iterator[str]:
    """RankLib/SVMrank lines without features: ``grade qid:N # docid query``. Whitespace in the
    query text (a comment) is collapsed to single spaces."""
    for grade, qid_number, docid, query_text in rows:
        if isinstance(qid_number, bool) or not isinstance(qid_number, int) or qid_number < 0:
            raise ValueError(f"qid number must be a non-negative integer, got {qid_number!r}")
        _require_id(docid, "doc id")
        if not isinstance(query_text, str):
            raise ValueError(f"query text must be a string, got {query_text!r}")
        text = " ".join(query_text.split())
        comment = f"{docid} {text}" if text else docid
        yield f"{_format_number(grade)} qid:{qid_number} # {comment}\n"


# trec_eval prints these as integers (%ld); pytrec_eval returns them as floats.
_INTEGER_MEASURES = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})


def write_trec_eval_q(rows: Iterable[tuple[str, str, Any]]) -> Iterator[str]:
    """``trec_eval -q`` output lines, as trec_eval prints them: ``"%-22s\\t%s\\t%6.4f\\n"`` for
    measures, ``%ld`` for integer counts (num_q, num_ret, ..., or any int value) and the text itself
    for strings (runid, relstring)."""
    for measure, qid, value in rows:
        _require_id(measure, "measure")
        if not isinstance(qid, str) or not qid or _BAD_ID_CHAR.search(qid):
            raise ValueError(f"query id {qid!r} must be a non-empty string without whitespace")
        if isinstance(value, str):
            if "\n" in value or "\t" in value:
                raise ValueError(f"{measure}: value {value!r} contains a tab or line break")
            shown = value
        elif isinstance(value, bool):
            raise ValueError(f"{measure}: value must be a number or a string, got {value!r}")
        elif isinstance(value, int):
            shown = str(value)
        elif measure in _INTEGER_MEASURES and isinstance(value, float) and value.is_integer():
            shown = str(int(value))
        else:
            try:
                shown = f"{float(value):6.4f}"
            except (TypeError, ValueError):
                raise ValueError(f"{measure}: value must be a number or a string, got {value!r}") from None
        yield f"{measure:<22}\t{qid}\t{shown}\n"
