"""Judgments as Quepid-style CSV, per-rater CSV and JSON lines with every field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from judgments import limits

from .problems import (
    CANT_JUDGE,
    DISTRACTOR,
    GRADE_STRINGS,
    GRADES,
    JUDGMENT_GRADES,
    JUDGMENT_GRADES_TEXT,
    MAX_CSV_QUERY_LENGTH,
    RaterCell,
    Reader,
    Stream,
    excerpt,
    gc_paused,
    id_problem,
    json_type,
    require_id,
)
from .read import iter_csv_rows, iter_json_objects, json_id, json_line, json_text
from .records import JudgmentCsvRecord, JudgmentJsonRecord, RaterCsvFile, RaterCsvRecord
from .spreadsheet import csv_line, restore

# --------------------------------------------------------------------------------------------------
# Quepid CSV


def _grade_cell(cell: str) -> int | None:
    """A Quepid rating 0-4 (Quepid's scales start at 0: no distractor grade)."""
    grade = GRADE_STRINGS.get(cell.strip())
    return None if grade == DISTRACTOR else grade


@gc_paused
def parse_judgments_csv(stream: Stream, name: str = "<file>") -> list[JudgmentCsvRecord]:
    """Quepid-style CSV with a header naming the columns ``query``, ``docid`` (or ``doc_id``) and
    ``rating`` (any order, any case; other columns ignored). Ratings are integers 0-4 (empty is a
    problem). ``query`` is returned stripped; it may be a query id or a query text. Cells the writer
    guarded against formulas with an apostrophe are read back exactly (see spreadsheet)."""
    reader = Reader(name)
    columns: dict[str, int] | None = None
    width = 0
    for lineno, row in iter_csv_rows(stream, reader):
        if columns is None:
            names = [c.strip().lower() for c in row]
            aliases = {"query": ("query",), "docid": ("docid", "doc_id"), "rating": ("rating",)}
            found: dict[str, int] = {}
            for key, options in aliases.items():
                idx = [i for i, n in enumerate(names) if n in options]
                if len(idx) == 1:
                    found[key] = idx[0]
            if len(found) != 3:
                reader.add(
                    lineno,
                    "header",
                    f"header must name the columns query,docid,rating; got {excerpt(','.join(row), 120)}",
                )
                break  # rows cannot be read without knowing the columns
            columns = found
            width = len(row)
            continue
        if len(row) != width:
            reader.add(lineno, "line", f"expected {width} columns like the header, found {len(row)}")
            continue
        query = restore(row[columns["query"]].strip())  # the writer's apostrophe against formulas
        docid = restore(row[columns["docid"]].strip())
        rating = row[columns["rating"]]
        ok = True
        if not query:
            reader.add(lineno, "query", "query is empty")
            ok = False
        elif "\x00" in query or len(query) > MAX_CSV_QUERY_LENGTH:
            reader.add(
                lineno,
                "query",
                limits.too_long("query", query, MAX_CSV_QUERY_LENGTH) or "query contains a NUL character",
            )
            ok = False
        msg = id_problem(docid)
        if msg:
            reader.add(lineno, "docid", f"doc id {msg}")
            ok = False
        grade = _grade_cell(rating)
        if grade is None:
            what = "empty" if not rating.strip() else excerpt(rating)
            hint = " (Quepid's CSV has no distractor grade: use the per-rater CSV or JSON lines)"
            reader.add(
                lineno,
                "rating",
                f"rating must be an integer 0-4, got {what}" + (hint if rating.strip() == "-1" else ""),
            )
            ok = False
        if ok and not reader.twice(
            (query, docid), lineno, "docid", f"query {excerpt(query)} doc {docid} is rated twice"
        ):
            reader.keep(JudgmentCsvRecord(lineno, query, docid, grade))  # type: ignore[arg-type]
    return reader.finish("header and no judgments", "file is empty (no judgments after the header)")


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
        require_id(docid, "doc id")
        if isinstance(grade, bool) or grade not in GRADES:
            raise ValueError(
                f"rating must be an integer 0-4, got {grade!r} (Quepid's CSV has no distractor grade)"
            )
        yield csv_line([query, docid, str(grade)])


# --------------------------------------------------------------------------------------------------
# Per-rater CSV


def _rater_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str) and value.upper() == CANT_JUDGE:
        return CANT_JUDGE
    if isinstance(value, bool) or value not in JUDGMENT_GRADES:
        raise ValueError(f"a rater cell must be a grade -1 to 4, 'X' or None, got {value!r}")
    return str(value)


@gc_paused
def parse_rater_csv(stream: Stream, name: str = "<file>") -> RaterCsvFile:
    """Per-rater CSV: header ``query_id,doc_id,<rater>...``; each cell a grade 0-4, empty (no grade)
    or ``X`` (can't judge; ``x`` accepted). Every row's ``grades`` has every rater of the header."""
    reader = Reader(name)
    raters: list[str] | None = None
    for lineno, row in iter_csv_rows(stream, reader):
        if raters is None:
            cells = [restore(c.strip()) for c in row]
            if len(cells) < 2 or cells[0].lower() != "query_id" or cells[1].lower() != "doc_id":
                reader.add(
                    lineno,
                    "header",
                    f"header must start with query_id,doc_id; got {excerpt(','.join(row), 120)}",
                )
                break
            raters = cells[2:]
            bad = False
            for i, rater in enumerate(raters):
                msg = id_problem(rater)
                if msg:
                    reader.add(lineno, "header", f"rater name in column {i + 3} {msg}")
                    bad = True
                elif rater in raters[:i] or rater.lower() in ("query_id", "doc_id"):
                    reader.add(lineno, "header", f"rater {rater} appears twice in the header")
                    bad = True
            if bad:
                break
            continue
        if len(row) != len(raters) + 2:
            reader.add(
                lineno, "line", f"expected {len(raters) + 2} columns like the header, found {len(row)}"
            )
            continue
        qid, docid = restore(row[0].strip()), restore(row[1].strip())
        ok = True
        msg = id_problem(qid, query=True)
        if msg:
            reader.add(lineno, "query_id", f"query id {msg}")
            ok = False
        msg = id_problem(docid)
        if msg:
            reader.add(lineno, "doc_id", f"doc id {msg}")
            ok = False
        grades: dict[str, RaterCell] = {}
        for rater, cell in zip(raters, row[2:], strict=True):
            cell = cell.strip()
            if not cell:
                grades[rater] = None
            elif cell.upper() == CANT_JUDGE:
                grades[rater] = CANT_JUDGE
            else:
                grade = GRADE_STRINGS.get(cell)
                if grade is None:
                    reader.add(
                        lineno,
                        rater,
                        f"grade of {rater} must be {JUDGMENT_GRADES_TEXT}, empty or X, got {excerpt(cell)}",
                    )
                    ok = False
                grades[rater] = grade
        if ok and not reader.twice((qid, docid), lineno, "doc_id", f"query {qid} doc {docid} appears twice"):
            reader.keep(RaterCsvRecord(lineno, qid, docid, grades))
    rows = reader.finish("header and no rows", "file is empty (no rows after the header)")
    return RaterCsvFile(raters=raters or [], rows=rows)


def write_rater_csv(
    raters: Sequence[str], rows: Iterable[tuple[str, str, Mapping[str, RaterCell]]]
) -> Iterator[str]:
    """Per-rater CSV: header ``query_id,doc_id,<raters>``, then one row per pair. A rater missing
    from a row's mapping gets an empty cell; a rater not in ``raters`` is an error."""
    raters = list(raters)
    for i, rater in enumerate(raters):
        require_id(rater, "rater name")
        if rater in raters[:i] or rater.lower() in ("query_id", "doc_id"):
            raise ValueError(f"rater {rater} appears twice in the header")
    known = set(raters)
    yield csv_line(["query_id", "doc_id", *raters])
    for qid, docid, grades in rows:
        require_id(qid, "query id", query=True)
        require_id(docid, "doc id")
        unknown = [r for r in grades if r not in known]
        if unknown:
            raise ValueError(f"query {qid} doc {docid}: grades of raters not in the header: {unknown}")
        yield csv_line([qid, docid, *(_rater_cell(grades.get(r)) for r in raters)])


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
        return None, f"{key} must be an ISO 8601 string, got {json_type(value)}"
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None, f"{key} {excerpt(value)} is not an ISO 8601 timestamp"
    if dt.tzinfo is None or dt.utcoffset() is None:
        return None, f"{key} {excerpt(value)} has no timezone (add Z or +00:00)"
    return dt, None


def _judgment_from_obj(
    obj: Mapping[str, Any], lineno: int
) -> tuple[JudgmentJsonRecord | None, list[tuple[str, str]]]:
    errors: list[tuple[str, str]] = []
    qid, msg = json_id(obj, "query_id", query=True)
    if msg:
        errors.append(("query_id", msg))
    docid, msg = json_id(obj, "doc_id")
    if msg:
        errors.append(("doc_id", msg))
    rater = obj.get("rater")
    if rater is None:
        errors.append(("rater", "rater is missing"))
    else:
        msg = id_problem(rater)
        if msg:
            errors.append(("rater", f"rater {msg}"))
    cant_judge = obj.get("cant_judge", False)
    if cant_judge is None:
        cant_judge = False
    if not isinstance(cant_judge, bool):
        errors.append(("cant_judge", f"cant_judge must be true or false, got {json_type(cant_judge)}"))
        cant_judge = None
    final = obj.get("final", False)
    if final is None:
        final = False
    if not isinstance(final, bool):
        errors.append(("final", f"final must be true or false, got {json_type(final)}"))
    reason, msg = json_text(obj, "reason", limit=limits.NOTE)
    if msg:
        errors.append(("reason", msg))
    note, msg = json_text(obj, "note", limit=limits.NOTE)
    if msg:
        errors.append(("note", msg))
    if "grade" not in obj:
        errors.append(("grade", "grade is missing (use null with cant_judge true)"))
        grade = None
    else:
        grade = obj["grade"]
        if grade is not None and (
            isinstance(grade, bool) or not isinstance(grade, int) or grade not in JUDGMENT_GRADES
        ):
            shown = (
                json.dumps(grade, ensure_ascii=False)
                if isinstance(grade, (int, float, str, bool))
                else json_type(grade)
            )
            errors.append(
                ("grade", f"grade must be an integer {JUDGMENT_GRADES_TEXT}, or null, got {excerpt(shown)}")
            )
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


@gc_paused
def parse_judgments_jsonl(stream: Stream, name: str = "<file>") -> list[JudgmentJsonRecord]:
    """One judgment per line: ``{"query_id", "doc_id", "rater", "grade" (0-4 or null),
    "cant_judge"?, "reason"?, "note"?, "created_at"?, "updated_at"?, "final"?}``.

    grade is null exactly when cant_judge is true, which needs a non-empty reason; timestamps are
    ISO 8601 with a timezone (null or absent: unknown). A (query_id, doc_id, rater) twice is a problem,
    and so is a second ``"final": true`` record (an adjudicated grade) for a pair; a final record does
    not clash with the same rater's own judgment. Unknown keys are ignored."""
    reader = Reader(name)
    for lineno, obj in iter_json_objects(stream, reader):
        record, errors = _judgment_from_obj(obj, lineno)
        for key, msg in errors:
            reader.add(lineno, key, msg)
        if record is None:
            continue
        # A rater judges a pair once; a pair has at most one final (adjudicated) grade, whoever gave it.
        if record.final:
            field_, message = "final", f"query {record.query_id} doc {record.doc_id} has two final grades"
        else:
            field_, message = (
                "rater",
                f"{record.rater} judged query {record.query_id} doc {record.doc_id} twice",
            )
        key = (record.query_id, record.doc_id, "" if record.final else record.rater)
        if not reader.twice(key, lineno, field_, message):
            reader.keep(record)
    return reader.finish("judgments")


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
        yield json_line(obj)
