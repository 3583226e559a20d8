"""Queries, documents and judgments as the files other tools read: TSV, JSON lines, CSV (Quepid,
per rater), RRE. Python writes these lines (formats), from rows read through server-side cursors."""

from __future__ import annotations

import math
from collections.abc import Iterator

from judgments.exchange import formats
from judgments.models import Document, Judgment, Pair, Pool, Query
from judgments.query_tags import is_place

from .grades import COMBINED_SETUP, combined_grades_sql, combined_stem
from .pgtext import CSV_SPECIAL, csv_cell
from .stream import CHUNK_ROWS, ExportError, blocks, by_id, copy_blocks, id_order, named_rows

QUERY_COLUMNS = ("text", "id")
QUERY_FORMATS = ("tsv", "jsonl")
JUDGMENT_FORMATS = ("csv", "rater-csv", "jsonl", "quepid-csv", "rre")
RRE_SHAPES = ("grade", "doc")
DELETED_ADMIN = "deleted-admin"  # final_by of a final grade whose admin account was deleted


# --- Queries and documents ------------------------------------------------------------------------


def queries_lines(pool: Pool, fmt: str = "tsv") -> Iterator[str]:
    """Queries as TSV ``qid<TAB>text[<TAB>tags]`` or JSON lines with the information need, fields and tags."""
    if fmt not in QUERY_FORMATS:
        raise ValueError(f"query format must be one of {QUERY_FORMATS}, not {fmt!r}")
    rows = (
        Query.objects.filter(pool=pool)
        .order_by(id_order("external_id"))
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
        # A query created by a run or qrels import has no text yet: JSON lines say so with its id; they
        # carry the query's fields too (TSV cannot).
        records = (
            formats.QueryRecord(0, qid, text if text.strip() else qid, need, fields, tags)
            for qid, text, need, fields, tags in rows.values_list(
                "external_id", "text", "information_need", "fields", "tags"
            ).iterator(chunk_size=CHUNK_ROWS)
        )
        return blocks(writer(records))
    records = (
        formats.QueryRecord(0, qid, text if text.strip() else qid, need, None, tags)
        for qid, text, need, tags in rows.values_list(
            "external_id", "text", "information_need", "tags"
        ).iterator(chunk_size=CHUNK_ROWS)
    )
    return blocks(writer(records))


def documents_lines(pool: Pool, documents=None) -> Iterator[str]:
    """Documents as JSON lines ``{"id", "title", "body", "url", **extra}``: the pool's, or those of
    `documents` (a queryset: access.documents_for)."""
    rows = (
        (documents if documents is not None else Document.objects.all())
        .filter(pool=pool)
        .order_by(id_order("external_id"))
        .values_list("external_id", "title", "body", "url", "extra")
    )
    records = (
        formats.DocumentRecord(
            0, doc_id, title, body, url, extra if isinstance(extra, dict) else {"extra": extra}
        )
        for doc_id, title, body, url, extra in rows.iterator(chunk_size=CHUNK_ROWS)
    )
    return blocks(formats.write_documents_jsonl(records))


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
    fast = _ratings_csv_sql(pool, query_column)
    if fast is not None:
        return _ratings_csv_chunks(*fast)
    sql, params = combined_grades_sql(pool)

    def rows() -> Iterator[tuple[str, str, int]]:
        for qid, docid, grade, _pk, text, _pair in named_rows(sql, params, setup=COMBINED_SETUP):
            query = (text or "").strip() if query_column == "text" else qid
            yield query or qid, docid, quepid_grade(grade)

    return blocks(formats.write_judgments_csv(rows()))


def _ratings_csv_chunks(sql: str, params: list) -> Iterator[str]:
    yield "query,docid,rating\n"
    for block in copy_blocks(sql, params, setup=COMBINED_SETUP):
        yield block.decode()


def _writes(query: str, docid: str) -> bool:
    """Whether write_judgments_csv takes this query and doc id (else it raises ValueError)."""
    try:
        list(formats.write_judgments_csv([(query, docid, 0)]))
    except ValueError:
        return False
    return True


def _ratings_csv_sql(pool: Pool, query_column: str) -> tuple[str, list] | None:
    """The Quepid CSV lines as PostgreSQL writes them, byte for byte those of write_judgments_csv (tested),
    or None when the pool holds a query or doc id the writer refuses or a query cell with a carriage
    return (csv_line then quotes the whole line): the Python writer then does it all, errors included.
    Every query cell is encoded here, once a query; doc ids only when they are not plain ASCII or need
    quotes or the formula guard (the database keeps whitespace out of them)."""
    queries: list[tuple[int, str]] = []
    for pk, qid, text in Query.objects.filter(pool=pool).values_list("pk", "external_id", "text"):
        query = ((text or "").strip() if query_column == "text" else qid) or qid
        if "\r" in query or not _writes(query, "d"):
            return None
        queries.append((pk, csv_cell(query)))
    documents: list[tuple[str, str]] = []
    special = Document.objects.filter(pool=pool).exclude(external_id__regex=r"^[!-~]{1,200}$")
    special = special | Document.objects.filter(pool=pool, external_id__regex=CSV_SPECIAL)
    for docid in special.values_list("external_id", flat=True).iterator(chunk_size=CHUNK_ROWS):
        if not _writes("q", docid):
            return None
        documents.append((docid, csv_cell(docid)))
    inner, params = combined_grades_sql(pool, ordered=False)
    sql = f"""
        SELECT string_agg(qc.cell || ',' || COALESCE(dc.cell, c.docid) || ',' || greatest(0, floor(c.grade + 0.5))::int::text,
                          E'\\n' ORDER BY {by_id("c.docid")})
        FROM ({inner}) c
        JOIN unnest(%s::bigint[], %s::text[]) AS qc(id, cell) ON qc.id = c.query_pk
        LEFT JOIN unnest(%s::text[], %s::text[]) AS dc(id, cell) ON dc.id = c.docid
        GROUP BY c.qid
        ORDER BY {by_id("c.qid")}
    """
    cells = [[pk for pk, _ in queries], [cell for _, cell in queries]]
    return sql, [*params, *cells, [d for d, _ in documents], [cell for _, cell in documents]]


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
    sql = f"""
        SELECT q.external_id, d.external_id, array_agg(u.username), array_agg(j.grade), array_agg(j.cant_judge)
        FROM judgments_judgment j
        JOIN judgments_pair p ON p.id = j.pair_id
        JOIN judgments_query q ON q.id = p.query_id
        JOIN judgments_document d ON d.id = p.document_id
        JOIN auth_user u ON u.id = j.rater_id
        WHERE p.pool_id = %s
        GROUP BY q.external_id, d.external_id
        ORDER BY {by_id("q.external_id")}, {by_id("d.external_id")}
    """

    def rows() -> Iterator[tuple]:
        for qid, docid, users, grades, cant in named_rows(sql, [pool.pk]):
            cells = {u: (formats.CANT_JUDGE if c else g) for u, g, c in zip(users, grades, cant, strict=True)}
            yield qid, docid, cells

    if not raters:
        return iter(())
    return blocks(formats.write_rater_csv(raters, rows()))


def _graded_by_text(pool: Pool) -> list[tuple[str, str | None, int | None]]:
    """(query text, doc id, combined grade rounded half up) per graded pair and (text, None, None) per
    query without a grade: what Quepid's and RRE's files hold, by query id then doc id (code points,
    as every export). These files are for campaigns of
    thousands of pairs, not millions: the rows are sorted in memory. A query without text goes by its id."""
    sql, params = combined_grades_sql(pool)
    graded = set()
    rows: list[tuple[str, str | None, int | None]] = []
    for qid, docid, grade, query_pk, text, _pair in named_rows(sql, params, setup=COMBINED_SETUP):
        graded.add(query_pk)
        rows.append((qid, (text or "").strip() or qid, docid, quepid_grade(grade)))
    for pk, qid, text in Query.objects.filter(pool=pool).values_list("pk", "external_id", "text"):
        if pk not in graded:
            rows.append((qid, (text or "").strip() or qid, None, None))
    rows.sort(key=lambda row: (row[0], row[2] or ""))
    return [row[1:] for row in rows]


def quepid_csv_lines(pool: Pool) -> Iterator[str]:
    """Quepid's current judgment export: ``query,docid,rating`` with ratings as ``3.0`` and a
    ``query,,`` row for each query without a rating (the combined grade, rounded half up)."""
    return blocks(formats.write_quepid_csv(_graded_by_text(pool)))


def rre_lines(
    pool: Pool, *, index: str | None = None, shape: str = "grade", keep_zero: bool = False
) -> Iterator[str]:
    """RRE's ratings JSON (the flat shape RRE and Quepid both read) of the pool's combined grades.
    shape "grade": relevant documents keyed by grade (what Quepid imports); "doc": by document
    (Quepid's export). Grade 0 is left out unless keep_zero (RRE counts every listed document as
    relevant). Queries tagged group:G / topic:T (an RRE file's query groups and topics, imported) are
    written grouped under them (the nested shape). Two queries with the same text cannot both be
    written: an ExportError names them."""
    if shape not in RRE_SHAPES:
        raise ValueError(f"shape must be one of {RRE_SHAPES}, not {shape!r}")
    rows = list(_graded_by_text(pool))
    texts: dict[str, list[str]] = {}
    places: dict[str, list[str]] = {}  # query text -> its group: and topic: tags
    for qid, text, tags in Query.objects.filter(pool=pool).values_list("external_id", "text", "tags"):
        key = (text or "").strip() or qid
        texts.setdefault(key, []).append(qid)
        if own := [tag for tag in tags if is_place(tag)]:
            places[key] = own
    shared = {t: ids for t, ids in texts.items() if len(ids) > 1}
    if shared:
        text, ids = sorted(shared.items())[0]
        raise ExportError(
            f"RRE names queries by their text, and {len(shared)} texts belong to several queries "
            f"(e.g. {text!r}: {', '.join(sorted(ids)[:5])}); give those queries distinct texts first"
        )
    try:
        lines = list(
            formats.write_rre(rows, index=index or pool.name, shape=shape, keep_zero=keep_zero, tags=places)
        )
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    return iter(lines)


def judgments_jsonl_lines(pool: Pool) -> Iterator[str]:
    """Every judgment with grade, can't-judge flag, reason, note and timestamps, then every adjudicated
    final grade (``"final": true``, rater = the admin): what re-imports into an empty pool unchanged."""

    def records() -> Iterator[formats.JudgmentJsonRecord]:
        judgments = (
            Judgment.objects.in_pool(pool)
            .order_by(
                id_order("pair__query__external_id"),
                id_order("pair__document__external_id"),
                "rater__username",
            )
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
            .order_by(id_order("query__external_id"), id_order("document__external_id"))
            .values_list(
                "query__external_id", "document__external_id", "final_by__username", "final_grade", "final_at"
            )
        )
        for qid, docid, admin, grade, at in finals.iterator(chunk_size=CHUNK_ROWS):
            yield formats.JudgmentJsonRecord(
                0, qid, docid, admin or DELETED_ADMIN, grade, False, "", "", at, at, True
            )

    return blocks(formats.write_judgments_jsonl(records()))


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
