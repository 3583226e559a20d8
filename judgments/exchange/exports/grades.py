"""Combined grades, and the files made of them alone: TREC qrels and RankLib labels.

Combined grades follow the pool's rule, exactly as scoring uses them: an adjudicated final grade wins;
otherwise the raters' grades of the pair ("can't judge" is no grade) are combined by mean, median,
majority (most frequent, ties: the lower), min or max. A pair with no grade is not exported. A mean or
median may be fractional; the tools that read qrels (trec_eval, pytrec_eval, ir_measures) want
integers, so exports round half up unless ``rounding="exact"``. Whose grades count follows the pool's
grade source (humans only, humans with model judges filling the pairs no human graded, or everyone),
as in scoring. Plain qrels stay plain: the rule, the source and the scale go in the file name and the
export page; formats with comment lines (RankLib) carry them in a header.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connection

from judgments.models import CombineRule, GradeSource, ModelJudge, Pool, Query
from judgments.scale import rounded_grade

from .stream import blocks, copy_trec_blocks, named_rows

ROUNDINGS = ("round", "exact")

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


# Run combined_grades_sql with these (stream.copy_blocks' and named_rows' `setup`): no nested loops. The
# planner cannot tell how many pairs pass HAVING, guessed a few thousand, and probed the document table's
# key once per pair; hash joins take well under that nested loop's time on a realistic pool
# (bench_export; figures in docs/performance.md).
COMBINED_SETUP = ("SET LOCAL enable_nestloop = off",)


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
            LEFT JOIN judgments_judgment j ON j.pair_id = p.id AND NOT j.cant_judge AND NOT j.excluded
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
    # Rounded: judgments.scale.rounded_grade in SQL (a negative combined grade, a distractor to scoring,
    # stays -1 rather than rounding -0.5 up to a judged 0).
    if rounding == "round":
        return "(CASE WHEN grade < 0 THEN -1 ELSE floor(grade + 0.5)::int END)::text"
    return "grade::text"


def qrels_blocks(pool: Pool, *, rounding: str = "round") -> Iterator[bytes]:
    """Plain TREC qrels ``qid 0 docid grade`` of the pool's combined grades, as blocks of bytes.

    PostgreSQL formats the lines, joins them in blocks of up to 1,000 and COPY streams the blocks
    (bench_export compares this with psql's COPY of the raw judgments). Lines come in the database's
    order: trec_eval and the other readers do not care; `sort` two exports to compare them."""
    grade = _grade_sql(rounding)
    inner, params = combined_grades_sql(pool, ordered=False)
    sql = f"""
        SELECT string_agg(c.qid || ' 0 ' || c.docid || ' ' || {grade}, E'\\n')
        FROM ({inner}) c GROUP BY c.pair_pk / 1000
    """
    return copy_trec_blocks(sql, params, what=f"Pool {pool.name}", setup=COMBINED_SETUP)


def qrels_chunks(pool: Pool, *, rounding: str = "round") -> Iterator[str]:
    """qrels_blocks as text, for responses and text streams."""
    return (block.decode("utf-8") for block in qrels_blocks(pool, rounding=rounding))


def ranklib_lines(pool: Pool, *, rounding: str = "round") -> Iterator[str]:
    """RankLib/LTR label lines ``grade qid:N # docid query text``, with a header of ``#`` comments
    (RankLib skips them) saying the rule, the scale and, when query ids are not all integers, which
    number stands for which query."""
    from judgments.exchange import formats

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
            yield from blocks(f"# qid:{n} = {q}\n" for q, n in numbers.items())
        rows = (
            (rounded_grade(grade) if rounding == "round" else grade, numbers[qid], docid, text or qid)
            for qid, docid, grade, _pk, text, _pair in named_rows(sql, params, setup=COMBINED_SETUP)
        )
        yield from blocks(formats.write_ranklib(rows))

    return lines()
