"""Every export of a pool as a stream of text chunks: nothing builds a whole file in memory.

Each function returns a generator of ``str`` chunks (each a run of complete lines) that a management
command writes to stdout and a view hands to ``StreamingHttpResponse``. Rows come from server-side
cursors (``.iterator(chunk_size=...)`` or a named cursor); the TREC formats (qrels, runs) are formatted
by PostgreSQL itself and fetched many lines per row, because they are the large ones and Python per
line would dominate (see ``bench_exchange``).

Combined grades (qrels, RankLib, Quepid CSV) follow the pool's rule, exactly as scoring uses them:
an adjudicated final grade wins; otherwise the raters' grades of the pair ("can't judge" is no grade)
are combined by mean, median, majority (most frequent, ties: the lower), min or max. A pair with no
grade is not exported. A mean or median may be fractional; the tools that read qrels (trec_eval,
pytrec_eval, ir_measures) want integers, so exports round half up unless ``rounding="exact"``.
Whose grades count follows the pool's grade source (humans only, humans with model judges filling
the pairs no human graded, or everyone), as in scoring.
Plain qrels stay plain: the rule, the source and the scale go in the file name and the export page;
formats with comment lines (RankLib) carry them in a header.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from django.db import connection, transaction

from judgments import access
from judgments.models import CombineRule, Document, GradeSource, Judgment, ModelJudge, Pair, Pool, Query, Run

from . import formats

CHUNK_ROWS = 2000
ROUNDINGS = ("round", "exact")
QUERY_COLUMNS = ("text", "id")
QUERY_FORMATS = ("tsv", "jsonl")
JUDGMENT_FORMATS = ("csv", "rater-csv", "jsonl", "quepid-csv", "rre")
RRE_SHAPES = ("grade", "doc")
DELETED_ADMIN = "deleted-admin"  # final_by of a final grade whose admin account was deleted


class ExportError(ValueError):
    """The pool holds data that the format cannot represent (the message says what and where)."""


# --- Combined grades ------------------------------------------------------------------------------

# {f}: a FILTER clause choosing whose grades count (empty: all of the pair's grades).
_AGGREGATES = {
    CombineRule.MEAN: "avg(j.grade){f}::float8",  # the same rules as scoring.grades
    CombineRule.MEDIAN: "percentile_cont(0.5) WITHIN GROUP (ORDER BY j.grade){f}",
    # mode() keeps the first of equally frequent values in the ORDER BY: the lower grade.
    CombineRule.MAJORITY: "(mode() WITHIN GROUP (ORDER BY j.grade){f})::float8",
    CombineRule.MIN: "min(j.grade){f}::float8",
    CombineRule.MAX: "max(j.grade){f}::float8",
}


def _combined_expression(pool: Pool) -> tuple[str, str]:
    """(grade expression, HAVING condition) of a pair's combined grade under the pool's rule and grade
    source. Without model judges, or with source "all", every grade counts (the plain aggregate)."""
    aggregate = _AGGREGATES[CombineRule(pool.combine_rule)]
    source = GradeSource(pool.grade_source)
    models = [] if source == GradeSource.ALL else ModelJudge.objects.rater_ids()
    if not models:
        return f"COALESCE(p.final_grade::float8, {aggregate.format(f='')})", "count(j.grade) > 0"
    # Integers from the database, written as a literal: the statement keeps its parameters simple.
    is_model = f"j.rater_id = ANY('{{{','.join(str(int(m)) for m in models)}}}'::bigint[])"
    human = aggregate.format(f=f" FILTER (WHERE NOT {is_model})")
    if source == GradeSource.HUMANS:
        return (
            f"COALESCE(p.final_grade::float8, {human})",
            f"count(j.grade) FILTER (WHERE NOT {is_model}) > 0",
        )
    model = aggregate.format(f=f" FILTER (WHERE {is_model})")
    return f"COALESCE(p.final_grade::float8, {human}, {model})", "count(j.grade) > 0"


def combined_grades_sql(pool: Pool, *, ordered: bool = True) -> tuple[str, list]:
    """SQL selecting (qid, docid, grade float, query_pk, query_text, pair_pk) for every pair of `pool`
    that has a combined grade, ordered by query id then doc id unless `ordered` is False.

    One GROUP BY over the pool's pairs and their judgments, every join possible on an index: the plan
    stays linear even when the planner's statistics are stale or empty (a subquery per pair would not)."""
    grade, graded = _combined_expression(pool)
    order = "ORDER BY q.external_id, d.external_id" if ordered else ""
    # Grades per pair first (narrow rows), the ids joined after: the cheapest plan we measured.
    sql = f"""
        SELECT q.external_id AS qid, d.external_id AS docid, g.grade, q.id AS query_pk, q.text AS query_text,
               g.id AS pair_pk
        FROM (
            SELECT p.id, p.query_id, p.document_id, {grade} AS grade
            FROM judgments_pair p
            LEFT JOIN judgments_judgment j ON j.pair_id = p.id AND NOT j.cant_judge
            WHERE p.pool_id = %s
            GROUP BY p.id
            HAVING p.final_grade IS NOT NULL OR {graded}
        ) g
        -- The pool conditions on q and d are implied; they let the planner read only this pool's rows.
        JOIN judgments_query q ON q.id = g.query_id AND q.pool_id = %s
        JOIN judgments_document d ON d.id = g.document_id AND d.pool_id = %s
        {order}
    """
    return sql, [pool.pk, pool.pk, pool.pk]


def combined_grades(pool: Pool) -> dict[tuple[str, str], float]:
    """{(query id, doc id): combined grade} of a pool (small pools, tests and comparisons)."""
    sql, params = combined_grades_sql(pool)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {(q, d): g for q, d, g, *_ in cursor.fetchall()}


def scale_text(pool: Pool) -> str:
    return ", ".join(f"{e.get('grade')} {e.get('label', '')}".strip() for e in pool.grade_scale)


def combined_note(pool: Pool, rounding: str = "round") -> str:
    """One sentence saying how the exported grades were made (export page, RankLib header)."""
    rule = CombineRule(pool.combine_rule)
    source = GradeSource(pool.grade_source)
    rounded = "rounded half up to integers" if rounding == "round" else "exact (may be fractional)"
    return (
        f"Combined grades of pool {pool.name}: rule {rule.value} ({rule.label}); grades from "
        f"{source.value} ({source.label}); an adjudicated final grade wins; can't-judge is no grade; "
        f"{rounded}. Scale: {scale_text(pool)}."
    )


def combined_stem(pool: Pool) -> str:
    """pool.rule, plus the grade source unless it is humans only: robust.mean, robust.mean.fill."""
    return f"{pool.name}.{pool.combine_rule}{GradeSource(pool.grade_source).file_tag}"


def qrels_filename(pool: Pool, rounding: str = "round") -> str:
    """The rule, source and rounding go in the name, since plain qrels have no header: robust.mean.qrels
    (humans only), robust.mean.fill.qrels, robust.mean.all-exact.qrels."""
    suffix = "" if rounding == "round" else "-exact"
    return f"{combined_stem(pool)}{suffix}.qrels"


def _grade_sql(rounding: str) -> str:
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, not {rounding!r}")
    # float8::text prints the shortest exact form (2.5, 3), like Python's repr used by formats.write_qrels.
    return "floor(grade + 0.5)::int::text" if rounding == "round" else "grade::text"


# A control character in an id would break a line format (trec_eval and the parsers split on it). The
# database keeps whitespace out of ids, not every control character, so streamed lines are checked.
_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
_CONTROL_TEXT = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
# COPY's text format escapes these; nothing else can appear once control characters are refused.
_COPY_ESCAPE = re.compile(rb"\\[\\bfnrtv]")
_COPY_UNESCAPED = {
    b"\\\\": b"\\",
    b"\\b": b"\b",
    b"\\f": b"\f",
    b"\\n": b"\n",
    b"\\r": b"\r",
    b"\\t": b"\t",
    b"\\v": b"\v",
}


def _refuse_control(where: str) -> ExportError:
    return ExportError(f"{where} has an id with a control character, which a TREC file cannot hold.")


def _copy_blocks(sql: str, params: list, *, what: str) -> Iterator[bytes]:
    """``COPY (sql) TO STDOUT`` of a query whose rows are blocks of lines joined by newlines, as bytes
    (COPY escapes the newlines inside a row; they are restored here). The server streams; nothing
    holds more than a row. Many lines per row: Python works per block, not per line."""
    with connection.cursor() as cursor:
        # The driver's own cursor: COPY with client-side parameters, rows as raw bytes.
        with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT", params) as copy:
            try:
                for row in copy:
                    yield _checked_block(bytes(row), what)
            except GeneratorExit:
                # Abandoned (a client went away): read the rest rather than let psycopg send a cancel
                # request, which arrives asynchronously and can cancel the connection's *next*
                # statement when the server had already sent everything (a flaky test showed it).
                for _ in copy:
                    pass
                raise


def _checked_block(block: bytes, what: str) -> bytes:
    if b"\\\\" in block:  # an escaped backslash: undo every escape properly
        block = _COPY_ESCAPE.sub(lambda m: _COPY_UNESCAPED[m.group()], block)
    elif b"\\" in block:
        block = block.replace(b"\\n", b"\n")
        if b"\\" in block:  # \t, \b...: a control character, escaped by COPY
            raise _refuse_control(what)
    if _CONTROL.search(block):
        raise _refuse_control(what)
    return block


def _stream_sql(sql: str, params: list, *, what: str, rows: int = 200) -> Iterator[str]:
    """Fetch one text column (a block of lines per row) through a named server-side cursor."""
    # A named cursor lives in a transaction (Django adds WITH HOLD only in autocommit for querysets).
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.itersize = rows
        cursor.execute(sql, params)
        while True:
            batch = cursor.fetchmany(rows)
            if not batch:
                return
            for (block,) in batch:
                if _CONTROL_TEXT.search(block):
                    raise _refuse_control(what)
                yield block


def qrels_blocks(pool: Pool, *, rounding: str = "round") -> Iterator[bytes]:
    """Plain TREC qrels ``qid 0 docid grade`` of the pool's combined grades, as blocks of bytes.

    PostgreSQL formats the lines, joins them in blocks of up to 1,000 and COPY streams the blocks
    (bench_exchange compares this with psql's COPY of the raw judgments). Lines come in the
    database's order: trec_eval and the other readers do not care; `sort` two exports to compare them."""
    grade = _grade_sql(rounding)
    inner, params = combined_grades_sql(pool, ordered=False)
    sql = f"""
        SELECT string_agg(c.qid || ' 0 ' || c.docid || ' ' || {grade}, E'\\n')
        FROM ({inner}) c GROUP BY c.pair_pk / 1000
    """
    return _copy_blocks(sql, params, what=f"Pool {pool.name}")


def qrels_chunks(pool: Pool, *, rounding: str = "round") -> Iterator[str]:
    """qrels_blocks as text, for responses and text streams."""
    blocks = qrels_blocks(pool, rounding=rounding)
    return (block.decode("utf-8") for block in blocks)


def _blocks(lines: Iterable[str], size: int = 1000) -> Iterator[str]:
    """Join generated lines into blocks: fewer, larger writes to stdout or the socket."""
    iterator = iter(lines)
    while True:
        block = "".join(itertools.islice(iterator, size))
        if not block:
            return
        yield block


def ranklib_lines(pool: Pool, *, rounding: str = "round") -> Iterator[str]:
    """RankLib/LTR label lines ``grade qid:N # docid query text``, with a header of ``#`` comments
    (RankLib skips them) saying the rule, the scale and, when query ids are not all integers, which
    number stands for which query."""
    _grade_sql(rounding)
    ids = list(
        Query.objects.filter(pool=pool, pairs__isnull=False)
        .distinct()
        .order_by("external_id")
        .values_list("external_id", flat=True)
    )
    numeric = all(q.isascii() and q.isdigit() for q in ids)
    numbers = {q: (int(q) if numeric else n) for n, q in enumerate(ids, start=1)}
    header = [f"# {combined_note(pool, rounding)}\n"]
    if numeric:
        header.append("# qid:N is the query id.\n")
    else:
        header.append("# qid:N numbers the queries in order of their ids:\n")
    sql, params = combined_grades_sql(pool)

    def lines() -> Iterator[str]:
        yield "".join(header)
        if not numeric:
            yield from _blocks(f"# qid:{n} = {q}\n" for q, n in numbers.items())
        rows = (
            (math.floor(grade + 0.5) if rounding == "round" else grade, numbers[qid], docid, text or qid)
            for qid, docid, grade, _pk, text, _pair in _named_rows(sql, params)
        )
        yield from _blocks(formats.write_ranklib(rows))

    return lines()


def _named_rows(sql: str, params: list, rows: int = CHUNK_ROWS) -> Iterator[tuple]:
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.itersize = rows
        cursor.execute(sql, params)
        while True:
            batch = cursor.fetchmany(rows)
            if not batch:
                return
            yield from batch


# --- Runs -----------------------------------------------------------------------------------------


_VALID_ID = re.compile(r"[^\s\x00-\x1f\x7f-\x9f]+")


def run_tag(run: Run) -> str:
    """The run's own tag when it is a valid id, else its configuration's name."""
    tag = run.tag
    if tag and len(tag) <= formats.MAX_ID_LENGTH and _VALID_ID.fullmatch(tag):
        return tag
    return run.configuration.name


def run_filename(run: Run) -> str:
    return f"{run.configuration.pool.name}.{run.configuration.name}.run{run.pk}.trec"


def run_chunks(run: Run) -> Iterator[str]:
    """TREC run lines ``qid Q0 docid rank score tag``, scores n..1 (strictly decreasing, so trec_eval's
    score sort keeps our order), by query id. PostgreSQL formats them, one block per ranking."""
    tag = run_tag(run)
    sql = """
        SELECT string_agg(q.external_id || ' Q0 ' || d.external_id || ' ' || u.ord || ' '
                          || (cardinality(r.doc_ids) - u.ord + 1) || ' ' || %s || E'\\n', '' ORDER BY u.ord)
        FROM judgments_ranking r
        JOIN judgments_query q ON q.id = r.query_id
        CROSS JOIN LATERAL unnest(r.doc_ids) WITH ORDINALITY AS u(doc, ord)
        JOIN judgments_document d ON d.id = u.doc
        WHERE r.run_id = %s
        GROUP BY q.external_id, r.id
        ORDER BY q.external_id
    """
    return _stream_sql(sql, [tag, run.pk], what=f"Run {run.pk}")


# --- Queries and documents ------------------------------------------------------------------------


def queries_lines(pool: Pool, fmt: str = "tsv") -> Iterator[str]:
    """Queries as TSV ``qid<TAB>text`` or JSON lines with the information need."""
    if fmt not in QUERY_FORMATS:
        raise ValueError(f"query format must be one of {QUERY_FORMATS}, not {fmt!r}")
    rows = (
        Query.objects.filter(pool=pool)
        .order_by("external_id")
        .values_list("external_id", "text", "information_need")
    )
    if fmt == "tsv":
        problem = rows.filter(text__regex=r"[\t\r\n]").values_list("external_id", flat=True).first()
        if problem is not None:
            raise ExportError(
                f"Query {problem} has a tab or line break in its text; export as JSON lines instead."
            )
        empty = rows.filter(text__regex=r"^\s*$").values_list("external_id", flat=True).first()
        if empty is not None:
            raise ExportError(f"Query {empty} has no text; TSV needs one (export as JSON lines instead).")
        writer = formats.write_queries_tsv
    else:
        writer = formats.write_queries_jsonl
    # A query created by a run or qrels import has no text yet: JSON lines say so with its id.
    records = (
        (qid, text if text.strip() else qid, need) for qid, text, need in rows.iterator(chunk_size=CHUNK_ROWS)
    )
    return _blocks(writer(records))


def documents_lines(pool: Pool) -> Iterator[str]:
    """Documents as JSON lines ``{"id", "title", "body", "url", **extra}``."""
    rows = (
        Document.objects.filter(pool=pool)
        .order_by("external_id")
        .values_list("external_id", "title", "body", "url", "extra")
    )
    records = (
        formats.DocumentRecord(
            0, doc_id, title, body, url, extra if isinstance(extra, dict) else {"extra": extra}
        )
        for doc_id, title, body, url, extra in rows.iterator(chunk_size=CHUNK_ROWS)
    )
    return _blocks(formats.write_documents_jsonl(records))


# --- Judgments ------------------------------------------------------------------------------------


def quepid_grade(grade: float) -> int:
    """A combined grade as Quepid's CSV and RRE hold it: rounded half up, and a distractor (a negative
    combined grade) written as 0, not relevant, since their scales start at 0."""
    return max(0, math.floor(grade + 0.5))


def judgments_csv_lines(pool: Pool, *, query_column: str = "text") -> Iterator[str]:
    """Quepid's ``query,docid,rating``: one combined grade per pair (rounded half up to an integer).
    ``query_column="text"`` writes the query text (Quepid matches by text; a query without text gets
    its id), ``"id"`` the query id."""
    if query_column not in QUERY_COLUMNS:
        raise ValueError(f"query column must be one of {QUERY_COLUMNS}, not {query_column!r}")
    sql, params = combined_grades_sql(pool)

    def rows() -> Iterator[tuple[str, str, int]]:
        for qid, docid, grade, _pk, text, _pair in _named_rows(sql, params):
            query = (text or "").strip() if query_column == "text" else qid
            yield query or qid, docid, quepid_grade(grade)

    return _blocks(formats.write_judgments_csv(rows()))


def raters_of(pool: Pool) -> list[str]:
    """Usernames of everyone who judged a pair of the pool, sorted."""
    return list(
        Judgment.objects.in_pool(pool)
        .order_by("rater__username")
        .values_list("rater__username", flat=True)
        .distinct()
    )


def rater_csv_lines(pool: Pool) -> Iterator[str]:
    """One row per judged pair, one column per rater: grade 0-4, X (can't judge) or empty."""
    raters = raters_of(pool)
    sql = """
        SELECT q.external_id, d.external_id, array_agg(u.username), array_agg(j.grade), array_agg(j.cant_judge)
        FROM judgments_judgment j
        JOIN judgments_pair p ON p.id = j.pair_id
        JOIN judgments_query q ON q.id = p.query_id
        JOIN judgments_document d ON d.id = p.document_id
        JOIN auth_user u ON u.id = j.rater_id
        WHERE p.pool_id = %s
        GROUP BY q.external_id, d.external_id
        ORDER BY q.external_id, d.external_id
    """

    def rows() -> Iterator[tuple]:
        for qid, docid, users, grades, cant in _named_rows(sql, [pool.pk]):
            cells = {u: (formats.CANT_JUDGE if c else g) for u, g, c in zip(users, grades, cant, strict=True)}
            yield qid, docid, cells

    if not raters:
        return iter(())
    return _blocks(formats.write_rater_csv(raters, rows()))


def _graded_by_text(pool: Pool) -> list[tuple[str, str | None, int | None]]:
    """(query text, doc id, combined grade rounded half up) per graded pair and (text, None, None) per
    query without a grade: what Quepid's and RRE's files hold, in the pool's query order (a file imported
    into a new pool comes back in its own query order) then by doc id. These files are for campaigns of
    thousands of pairs, not millions: the rows are sorted in memory. A query without text goes by its id."""
    sql, params = combined_grades_sql(pool)
    graded = set()
    rows: list[tuple[str, str | None, int | None]] = []
    for qid, docid, grade, query_pk, text, _pair in _named_rows(sql, params):
        graded.add(query_pk)
        rows.append((query_pk, (text or "").strip() or qid, docid, quepid_grade(grade)))
    for pk, qid, text in Query.objects.filter(pool=pool).values_list("pk", "external_id", "text"):
        if pk not in graded:
            rows.append((pk, (text or "").strip() or qid, None, None))
    rows.sort(key=lambda row: (row[0], row[2] or ""))
    return [row[1:] for row in rows]


def quepid_csv_lines(pool: Pool) -> Iterator[str]:
    """Quepid's current judgment export: ``query,docid,rating`` with ratings as ``3.0`` and a
    ``query,,`` row for each query without a rating (the combined grade, rounded half up)."""
    return _blocks(formats.write_quepid_csv(_graded_by_text(pool)))


def rre_lines(
    pool: Pool, *, index: str | None = None, shape: str = "grade", keep_zero: bool = False
) -> Iterator[str]:
    """RRE's ratings JSON (the flat shape RRE and Quepid both read) of the pool's combined grades.
    shape "grade": relevant documents keyed by grade (what Quepid imports); "doc": by document
    (Quepid's export). Grade 0 is left out unless keep_zero (RRE counts every listed document as
    relevant). Two queries with the same text cannot both be written: an ExportError names them."""
    if shape not in RRE_SHAPES:
        raise ValueError(f"shape must be one of {RRE_SHAPES}, not {shape!r}")
    rows = list(_graded_by_text(pool))
    texts: dict[str, list[str]] = {}
    for qid, text in Query.objects.filter(pool=pool).values_list("external_id", "text"):
        texts.setdefault((text or "").strip() or qid, []).append(qid)
    shared = {t: ids for t, ids in texts.items() if len(ids) > 1}
    if shared:
        text, ids = sorted(shared.items())[0]
        raise ExportError(
            f"RRE names queries by their text, and {len(shared)} texts belong to several queries "
            f"(e.g. {text!r}: {', '.join(sorted(ids)[:5])}); give those queries distinct texts first"
        )
    try:
        lines = list(formats.write_rre(rows, index=index or pool.name, shape=shape, keep_zero=keep_zero))
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    return iter(lines)


def judgments_jsonl_lines(pool: Pool) -> Iterator[str]:
    """Every judgment with grade, can't-judge flag, reason, note and timestamps, then every adjudicated
    final grade (``"final": true``, rater = the admin): what re-imports into an empty pool unchanged."""

    def records() -> Iterator[formats.JudgmentJsonRecord]:
        judgments = (
            Judgment.objects.in_pool(pool)
            .order_by("pair__query__external_id", "pair__document__external_id", "rater__username")
            .values_list(
                "pair__query__external_id",
                "pair__document__external_id",
                "rater__username",
                "grade",
                "cant_judge",
                "cant_judge_reason",
                "note",
                "created_at",
                "updated_at",
            )
        )
        for qid, docid, rater, grade, cant, reason, note, created, updated in judgments.iterator(
            chunk_size=CHUNK_ROWS
        ):
            yield formats.JudgmentJsonRecord(
                0, qid, docid, rater, grade, cant, reason, note, created, updated
            )
        finals = (
            Pair.objects.in_pool(pool)
            .filter(final_grade__isnull=False)
            .order_by("query__external_id", "document__external_id")
            .values_list(
                "query__external_id", "document__external_id", "final_by__username", "final_grade", "final_at"
            )
        )
        for qid, docid, admin, grade, at in finals.iterator(chunk_size=CHUNK_ROWS):
            yield formats.JudgmentJsonRecord(
                0, qid, docid, admin or DELETED_ADMIN, grade, False, "", "", at, at, True
            )

    return _blocks(formats.write_judgments_jsonl(records()))


def judgments_lines(pool: Pool, fmt: str, **options) -> Iterator[str]:
    if fmt == "csv":
        return judgments_csv_lines(pool, **options)
    if fmt == "rater-csv":
        return rater_csv_lines(pool)
    if fmt == "jsonl":
        return judgments_jsonl_lines(pool)
    if fmt == "quepid-csv":
        return quepid_csv_lines(pool)
    if fmt == "rre":
        return rre_lines(pool, **options)
    raise ValueError(f"judgment format must be one of {JUDGMENT_FORMATS}, not {fmt!r}")


def judgments_filename(pool: Pool, fmt: str) -> str:
    return {
        "csv": f"{combined_stem(pool)}.ratings.csv",
        "rater-csv": f"{pool.name}.raters.csv",
        "jsonl": f"{pool.name}.judgments.jsonl",
        "quepid-csv": f"{combined_stem(pool)}.quepid.csv",
        "rre": f"{combined_stem(pool)}.rre.json",
    }[fmt]


# --- What each role may download ------------------------------------------------------------------


@dataclass(frozen=True)
class PoolExport:
    """One download of a pool, for the export page, the API and the tests alike."""

    key: str
    title: str
    audience: str  # access.ADMIN: admins only; access.ENGINEER: engineers of the pool and admins
    content_type: str
    make: Callable[[Pool], Iterator[str]]
    filename: Callable[[Pool], str]
    combined: bool = False  # made of combined grades: the page shows the rule and scale beside it


_TEXT = "text/plain; charset=utf-8"
_JSONL = "application/x-ndjson; charset=utf-8"
_CSV = "text/csv; charset=utf-8"

POOL_EXPORTS: dict[str, PoolExport] = {
    e.key: e
    for e in (
        PoolExport("qrels", "TREC qrels (qid 0 docid grade), integer grades", access.ADMIN, _TEXT,
                   qrels_chunks, qrels_filename, combined=True),
        PoolExport("qrels-exact", "TREC qrels with exact (possibly fractional) combined grades", access.ADMIN, _TEXT,
                   lambda p: qrels_chunks(p, rounding="exact"), lambda p: qrels_filename(p, "exact"), combined=True),
        PoolExport("ranklib", "RankLib / LTR labels (grade qid:N # docid query)", access.ADMIN, _TEXT,
                   ranklib_lines, lambda p: f"{combined_stem(p)}.ranklib.txt", combined=True),
        PoolExport("judgments-csv", "Quepid CSV query,docid,rating (query text)", access.ADMIN, _CSV,
                   judgments_csv_lines, lambda p: judgments_filename(p, "csv"), combined=True),
        PoolExport("judgments-csv-ids", "Quepid CSV query,docid,rating (query id)", access.ADMIN, _CSV,
                   lambda p: judgments_csv_lines(p, query_column="id"),
                   lambda p: f"{combined_stem(p)}.ratings-by-id.csv", combined=True),
        PoolExport("judgments-quepid-csv", "Quepid's current CSV export (ratings 3.0, unrated queries as query,,)",
                   access.ADMIN, _CSV, quepid_csv_lines, lambda p: judgments_filename(p, "quepid-csv"), combined=True),
        PoolExport("judgments-rre", "RRE ratings JSON (relevant documents by grade; Quepid imports it)", access.ADMIN,
                   "application/json; charset=utf-8", rre_lines, lambda p: judgments_filename(p, "rre"), combined=True),
        PoolExport("judgments-rater-csv", "Per-rater CSV (one column per rater)", access.ADMIN, _CSV,
                   rater_csv_lines, lambda p: judgments_filename(p, "rater-csv")),
        PoolExport("judgments-jsonl", "Every judgment and final grade, every field (JSON lines)", access.ADMIN, _JSONL,
                   judgments_jsonl_lines, lambda p: judgments_filename(p, "jsonl")),
        PoolExport("queries-tsv", "Queries as TSV (qid<TAB>text)", access.ENGINEER, _TEXT,
                   lambda p: queries_lines(p, "tsv"), lambda p: f"{p.name}.queries.tsv"),
        PoolExport("queries-jsonl", "Queries with information needs (JSON lines)", access.ENGINEER, _JSONL,
                   lambda p: queries_lines(p, "jsonl"), lambda p: f"{p.name}.queries.jsonl"),
        PoolExport("documents", "Documents (JSON lines)", access.ENGINEER, _JSONL,
                   documents_lines, lambda p: f"{p.name}.documents.jsonl"),
    )
}  # fmt: skip


def may_export(user, export: PoolExport) -> bool:
    """Judgments, qrels and RankLib: admins. Queries and documents: engineers too. Raters: nothing."""
    if access.is_admin(user):
        return True
    return export.audience == access.ENGINEER and access.is_engineer(user)


def may_export_run(user, run: Run) -> bool:
    """Admins any run; engineers their own teams' runs, and others' where the pool shares rankings."""
    return access.may_see_rankings(user, run.configuration)
