"""TREC qrels and runs (read and write), grade maps, RankLib and trec_eval -q output."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

from .problems import (
    BAD_ID_CHAR,
    GRADE_STRINGS,
    JUDGMENT_GRADES,
    JUDGMENT_GRADES_TEXT,
    MAX_ID_LENGTH,
    Reader,
    Stream,
    excerpt,
    format_number,
    gc_paused,
    id_problem,
    parse_int,
    require_id,
)
from .read import iter_trec_fields
from .records import QrelRecord, RunColumns, RunFile

# --------------------------------------------------------------------------------------------------
# Grade map


def parse_grade_map(text: str) -> dict[int, int | None]:
    """Parse ``"-2:0,-1:skip"`` into ``{-2: 0, -1: None}`` (None: skip lines with that grade).

    Sources are integers; targets are grades 0-4, -1 (the distractor grade) or ``skip``. Raises
    ValueError with a clear message.
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
        src = parse_int(src_s)
        if src is None:
            raise ValueError(f"grade map entry {n} {entry!r}: {src_s!r} is not an integer grade")
        if src in result:
            raise ValueError(f"grade map entry {n} {entry!r}: grade {src} is mapped twice")
        if dst_s.lower() == "skip":
            result[src] = None
            continue
        dst = parse_int(dst_s)
        if dst is None or dst not in JUDGMENT_GRADES:
            raise ValueError(
                f"grade map entry {n} {entry!r}: {dst_s!r} must be a grade 0-4 or 'skip' (or -1, a distractor)"
            )
        result[src] = dst
    return result


def _check_grade_map(grade_map: Mapping[int, int | None]) -> dict[int, int | None]:
    checked: dict[int, int | None] = {}
    for src, dst in grade_map.items():
        if isinstance(src, bool) or not isinstance(src, int):
            raise ValueError(f"grade map keys must be integers, got {src!r}")
        if dst is not None and (isinstance(dst, bool) or dst not in JUDGMENT_GRADES):
            raise ValueError(
                f"grade map value for {src} must be a grade 0-4 or None (skip), or -1, got {dst!r}"
            )
        checked[src] = dst
    return checked


# --------------------------------------------------------------------------------------------------
# TREC qrels


@gc_paused
def parse_qrels(
    stream: Stream, name: str = "<file>", *, grade_map: Mapping[int, int | None] | None = None
) -> list[QrelRecord]:
    """TREC qrels ``qid iter docid grade``. Grades must be integers 0-4, or -1 (a distractor: whether the
    pool accepts it is the importer's business), unless ``grade_map`` maps them (a None target skips the
    line). A (qid, docid) twice is a problem."""
    gmap = _check_grade_map(grade_map) if grade_map else {}
    reader = Reader(name)
    records: list[QrelRecord] = reader.records
    seen: dict[tuple[str, str], int] = reader.seen
    problems = reader.items  # `not problems` tests a list: no call a line
    skipped = 0
    max_id = MAX_ID_LENGTH
    for lineno, (qid, _iter, docid, grade_s) in iter_trec_fields(stream, reader, 4, "qid iter docid grade"):
        ok = True
        # Whitespace and control characters were ruled out for the whole line.
        if len(qid) > max_id:
            reader.add(lineno, "qid", f"query id {id_problem(qid, query=True)}")
            ok = False
        if len(docid) > max_id:
            reader.add(lineno, "docid", f"doc id {id_problem(docid)}")
            ok = False
        grade = GRADE_STRINGS.get(grade_s)
        skip = False
        if grade is None or (gmap and grade in gmap):
            value = parse_int(grade_s)
            if value is not None and value in gmap:
                grade = gmap[value]
                skip = grade is None
            elif value is not None and value in JUDGMENT_GRADES:
                grade = value
            else:
                hint = "" if gmap else " (a grade map can translate other grades)"
                reader.add(
                    lineno,
                    "grade",
                    f"grade must be an integer {JUDGMENT_GRADES_TEXT}, got {excerpt(grade_s)}{hint}",
                )
                ok = False
        if ok:
            key = (qid, docid)
            first = seen.get(key)
            if first is not None:
                reader.clash(first, lineno, "docid", f"query {qid} doc {docid} is judged twice")
                continue
            seen[key] = lineno
            if skip:
                skipped += 1
            elif not problems:
                records.append(QrelRecord(lineno, qid, docid, grade))  # type: ignore[arg-type]
    return reader.finish("judgments", f"no judgments left: all {skipped} lines were skipped by the grade map")


# --------------------------------------------------------------------------------------------------
# TREC run


def _read_run(stream: Stream, name: str, order: str) -> tuple[dict[str, list[tuple]], list[str]]:
    """Per query, entries ``(sort_key, docid, line, score)`` sorted into final order; and the tags."""
    if order not in ("score", "rank"):
        raise ValueError(f"order must be 'score' or 'rank', got {order!r}")
    by_rank = order == "rank"
    reader = Reader(name)
    per_query: dict[str, list[tuple]] = {}
    seen_docs: dict[str, dict[str, int]] = reader.seen  # per query: doc id -> line
    seen_ranks: dict[str, dict[int, int]] = {}
    tags: dict[str, None] = {}
    last_tag = None
    max_id = MAX_ID_LENGTH
    for lineno, fields in iter_trec_fields(stream, reader, 6, "qid Q0 docid rank score tag"):
        qid, _q0, docid, rank_s, score_s, tag = fields
        ok = True
        if len(qid) > max_id:
            reader.add(lineno, "qid", f"query id {id_problem(qid, query=True)}")
            ok = False
        if len(docid) > max_id:
            reader.add(lineno, "docid", f"doc id {id_problem(docid)}")
            ok = False
        if len(tag) > max_id:
            reader.add(lineno, "tag", f"run tag {id_problem(tag)}")
            ok = False
        try:
            if "_" in rank_s or not rank_s.isascii():
                raise ValueError
            rank = int(rank_s)
        except ValueError:
            reader.add(lineno, "rank", f"rank must be an integer, got {excerpt(rank_s)}")
            ok = False
        try:
            if "_" in score_s or not score_s.isascii():
                raise ValueError
            score = float(score_s)
            if not -math.inf < score < math.inf:
                reader.add(lineno, "score", f"score must be a finite number, got {excerpt(score_s)}")
                ok = False
        except ValueError:
            reader.add(lineno, "score", f"score must be a number, got {excerpt(score_s)}")
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
            reader.clash(first, lineno, "docid", f"doc {docid} is ranked twice for query {qid}")
            continue
        docs[docid] = lineno
        if by_rank:
            ranks = seen_ranks[qid]
            first = ranks.get(rank)
            if first is not None:
                reader.clash(first, lineno, "rank", f"rank {rank} is used twice for query {qid}")
                continue
            ranks[rank] = lineno
            per_query[qid].append((rank, docid, lineno, score))
        else:
            per_query[qid].append((score, docid, lineno))
    reader.finish("ranked documents")
    del seen_docs, seen_ranks, reader
    for entries in per_query.values():
        if by_rank:
            entries.sort()  # rank ascending (ranks are unique within a query)
        else:
            # trec_eval: score descending (as doubles), ties by docid descending (strcmp). Comparing
            # str code points is the same as comparing their UTF-8 bytes, and docids are unique.
            entries.sort(reverse=True)
    return per_query, list(tags)


@gc_paused
def parse_run(stream: Stream, name: str = "<file>", *, order: Literal["score", "rank"] = "score") -> RunFile:
    """TREC run ``qid Q0 docid rank score tag``.

    ``order="score"`` (trec_eval's): score descending, equal scores by docid descending (byte order);
    the rank column must be an integer but is ignored. ``order="rank"``: rank ascending (a rank used
    twice in a query is a problem). A docid twice in a query is a problem naming both lines.
    """
    per_query, tags = _read_run(stream, name, order)
    rankings = {qid: [e[1] for e in entries] for qid, entries in per_query.items()}
    return RunFile(rankings=rankings, tag=tags[0], tags=tags)


@gc_paused
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
# TREC writers


def write_qrels(rows: Iterable[tuple[str, str, Any]], *, header: str | None = None) -> Iterator[str]:
    """``qid 0 docid grade`` lines. A grade is printed as an integer when integral, else as the
    shortest float text (2.5). ``header`` (only when given) becomes ``# `` comment lines first —
    trec_eval 10 skips them, but pytrec_eval and ir_measures do not read comments."""
    if header is not None:
        for line in header.splitlines() or [""]:
            yield f"# {line}".rstrip() + "\n"
    for qid, docid, grade in rows:
        require_id(qid, "query id", query=True)
        require_id(docid, "doc id")
        yield f"{qid} 0 {docid} {format_number(grade)}\n"


def write_run(rankings: Iterable[tuple[str, Sequence[str]]], tag: str) -> Iterator[str]:
    """``qid Q0 docid rank score tag`` lines; rank 1..n and score n..1 (integers, strictly decreasing),
    so trec_eval's score sort reproduces exactly the given order. Empty rankings write nothing.
    A query given twice or a doc twice in a ranking is an error."""
    require_id(tag, "run tag")
    seen_queries: set[str] = set()
    for qid, docids in rankings:
        require_id(qid, "query id", query=True)
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
            require_id(docid, "doc id")
            yield f"{qid} Q0 {docid} {i + 1} {n - i} {tag}\n"


def write_ranklib(rows: Iterable[tuple[Any, int, str, str]]) -> Iterator[str]:
    """RankLib/SVMrank lines without features: ``grade qid:N # docid query``. Whitespace in the
    query text (a comment) is collapsed to single spaces."""
    for grade, qid_number, docid, query_text in rows:
        if isinstance(qid_number, bool) or not isinstance(qid_number, int) or qid_number < 0:
            raise ValueError(f"qid number must be a non-negative integer, got {qid_number!r}")
        require_id(docid, "doc id")
        if not isinstance(query_text, str):
            raise ValueError(f"query text must be a string, got {query_text!r}")
        text = " ".join(query_text.split())
        comment = f"{docid} {text}" if text else docid
        yield f"{format_number(grade)} qid:{qid_number} # {comment}\n"


# trec_eval prints these as integers (%ld); pytrec_eval returns them as floats.
_INTEGER_MEASURES = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})


def write_trec_eval_q(rows: Iterable[tuple[str, str, Any]]) -> Iterator[str]:
    """``trec_eval -q`` output lines, as trec_eval prints them: ``"%-22s\\t%s\\t%6.4f\\n"`` for
    measures, ``%ld`` for integer counts (num_q, num_ret, ..., or any int value) and the text itself
    for strings (runid, relstring)."""
    for measure, qid, value in rows:
        require_id(measure, "measure")
        if not isinstance(qid, str) or not qid or BAD_ID_CHAR.search(qid):
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
