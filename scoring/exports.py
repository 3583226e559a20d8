"""Score downloads for the web and the API, streamed from the stored `QueryScore` rows.

- `trec_eval_q_lines(run, flavour)`: `trec_eval -q` style text for one run: for each graded query
  (by id) the measures map, recip_rank, P_k, recall_k, ndcg_cut_k, then the "all" lines (runid,
  num_q and the means). With flavour "trec" the numbers are trec_eval's `-c -m ...` values.
- `score_lines(pool, flavour, fmt)`: the rows of `manage.py export_scores` (JSON lines or CSV): one per
  (configuration, query, metric) of each current run, then the "all" means; one flavour or several.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace

from django.db import connection
from django.db.models import Avg, Count

from judgments.exchange.exports import pgtext
from judgments.exchange.exports.runs import run_tag
from judgments.exchange.exports.stream import by_id, copy_blocks, id_order
from judgments.models import Pool, Run

from . import flavours
from .leaderboard import configuration_means
from .models import JUDGED_FIELDS, MEAN_FIELDS, METRIC_FIELDS, PoolMeasures, QueryScore

# trec_eval's measure names, in the order trec_eval prints them.
TREC_EVAL_NAMES: dict[str, str] = {
    "ap": "map",
    "mrr": "recip_rank",
    **{f"p@{k}": f"P_{k}" for k in flavours.CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in flavours.CUTOFFS},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in flavours.CUTOFFS},
}
SCORE_FORMATS = ("jsonl", "csv")
COLUMNS = ("configuration", "query", "flavor", "metric", "value", "judged")


def _check_flavour(flavour: str) -> None:
    if flavour not in flavours.FLAVOURS:
        raise ValueError(f"unknown flavour {flavour!r}; expected one of {', '.join(flavours.FLAVOURS)}")


def trec_eval_q_filename(run: Run, flavour: str) -> str:
    return f"{run.configuration.pool.name}.{run.configuration.name}.run{run.pk}.{flavour}.trec_eval"


def trec_eval_q_lines(run: Run, flavour: str = "trec") -> Iterator[str]:
    """`trec_eval -q` lines of the run's stored scores in `flavour`."""
    _check_flavour(flavour)
    columns = [METRIC_FIELDS[m] for m in TREC_EVAL_NAMES]
    rows = (
        QueryScore.objects.filter(run=run, flavor=flavour)
        .order_by(id_order("query__external_id"))
        .values_list("query__external_id", *columns)
        .iterator(chunk_size=2000)
    )

    def lines() -> Iterator[tuple[str, str, object]]:
        for qid, *values in rows:
            for name, value in zip(TREC_EVAL_NAMES.values(), values, strict=True):
                yield name, qid, value
        means = QueryScore.objects.filter(run=run, flavor=flavour).aggregate(
            n=Count("id"), **{m: Avg(METRIC_FIELDS[m]) for m in TREC_EVAL_NAMES}
        )
        yield "runid", "all", run_tag(run)
        yield "num_q", "all", means.pop("n")
        for metric, name in TREC_EVAL_NAMES.items():
            yield name, "all", means[metric] if means[metric] is not None else 0.0

    from judgments.exchange import formats

    return _blocks(formats.write_trec_eval_q(lines()))


def _blocks(lines: Iterator[str], size: int = 1000) -> Iterator[str]:
    block: list[str] = []
    for line in lines:
        block.append(line)
        if len(block) >= size:
            yield "".join(block)
            block.clear()
    if block:
        yield "".join(block)


def judged_metric(metric: str) -> str | None:
    """The judged@k that goes with a metric cut at k (None for mrr and ap)."""
    _, at, k = metric.partition("@")
    return f"judged@{k}" if at else None


def score_lines(
    pool: Pool, flavour: str | Sequence[str] = flavours.DEFAULT_FLAVOUR, fmt: str = "jsonl", *, segment=None
) -> Iterator[str]:
    """Every stored score of each configuration's current run, as `manage.py export_scores` prints them:
    by configuration name, flavour (one, or each of a sequence of flavours) and query id, the "all" means
    after each configuration's queries in a flavour; CSV has one header. Blocks of lines, as text.
    segment: a `scoring.segments.Segment`: only its queries' lines, and "all" means over them."""
    return (block.decode() for block in score_blocks(pool, flavour, fmt, segment=segment))


def score_blocks(
    pool: Pool, flavour: str | Sequence[str] = flavours.DEFAULT_FLAVOUR, fmt: str = "jsonl", *, segment=None
) -> Iterator[bytes]:
    """score_lines as UTF-8 blocks of lines. The lines of each query are written by PostgreSQL
    (`_query_lines_sql`) exactly as `_json_line`/`_csv_line` write them (tests compare the two); a row
    holding a value the SQL cannot write as Python does (NaN, 1e16) and the "all" means go through them."""
    names = [flavour] if isinstance(flavour, str) else list(flavour)
    query_ids = None if segment is None else segment.query_ids
    for name in names:
        _check_flavour(name)
    if fmt not in SCORE_FORMATS:
        raise ValueError(f"format must be one of {SCORE_FORMATS}, not {fmt!r}")
    own = PoolMeasures.objects.filter(pool=pool).values_list("names", flat=True).first()
    if own is not None:  # the pool's own measure set (numpy is imported only then)
        from .measure_exports import measure_score_blocks
        from .measures.names import parse

        return measure_score_blocks(pool, [parse(name) for name in own], names, fmt, query_ids)
    # The order of the old single query: configuration name, then flavour name, then query id.
    groups: dict[str, list[tuple[str, int, dict]]] = {}
    for name in sorted(set(names)):
        rows = configuration_means(pool, name, archived=True)  # archived: kept for exports
        if segment is not None:  # means over the segment's rows only
            from .segments import run_means as segment_means

            means = segment_means([row.run_id for row in rows], name, tuple(MEAN_FIELDS), segment)
            rows = [replace(row, current=means.get(row.run_id)) for row in rows]
        for row in rows:
            if row.current is not None:  # the current run has scores in this flavour
                groups.setdefault(row.configuration.name, []).append((name, row.run_id, row.current.means))
    return _score_blocks(pool, fmt, groups, query_ids)


def _score_blocks(
    pool: Pool, fmt: str, groups: dict[str, list[tuple[str, int, dict]]], query_ids=None
) -> Iterator[bytes]:
    write = _json_line if fmt == "jsonl" else _csv_line
    if fmt == "csv":
        yield _csv_line(COLUMNS).encode()
    if not groups:
        return
    lookup = _encoded_queries(pool, fmt)
    order = pool.configurations.order_by("name").values_list("name", flat=True)
    for configuration in [name for name in order if name in groups]:
        for name, run_id, means in groups[configuration]:
            sql, params = _query_lines_sql(configuration, name, run_id, fmt, lookup, query_ids)
            for block in copy_blocks(sql, params, setup=pgtext.FLOAT_SETUP):
                yield _with_python_lines(block, configuration, name, write) if b"\t#" in block else block
            yield "".join(map(write, _metric_rows(configuration, "all", name, means))).encode()


_LINE_METRICS = (*flavours.METRICS, *flavours.UDCG)  # a line each, in this order, udcg@k last
_NAMES = (*_LINE_METRICS, *flavours.JUDGED)
_FIELDS = tuple(MEAN_FIELDS[m] for m in _LINE_METRICS) + tuple(JUDGED_FIELDS[m] for m in flavours.JUDGED)


def _with_python_lines(block: bytes, configuration: str, flavour: str, write) -> bytes:
    """A block from `_query_lines_sql` with each marker line (a row holding a value out of the SQL's
    range: TAB # {values} TAB query id) replaced by that row's lines, written by Python."""
    lines = block.split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b"\t#"):
            raw, query = line[2:].split(b"\t", 1)
            values = _values([float(v) for v in raw[1:-1].split(b",")])
            text = "".join(map(write, _metric_rows(configuration, query.decode(), flavour, values)))
            lines[i] = text[:-1].encode()  # its last newline is the one the split took
    return b"\n".join(lines)


def _values(values: list) -> dict:
    return dict(zip(_NAMES, values, strict=True))


def _metric_rows(configuration: str, query: str, flavour: str, values: dict) -> Iterator[tuple]:
    for metric in _LINE_METRICS:
        judged = judged_metric(metric)
        yield configuration, query, flavour, metric, values[metric], values[judged] if judged else None


def _json_line(row: tuple) -> str:
    """The definition of a JSON line (the SQL of `_query_lines_sql` reproduces it)."""
    return json.dumps(dict(zip(COLUMNS, row, strict=True))) + "\n"


def _csv_line(row: tuple) -> str:
    """Spreadsheet-bound: the one CSV writer, which guards cells against formulas. (The file formats are
    imported when a CSV is asked for: JSON lines, export_scores' default, start without them.)"""
    from judgments.exchange.formats.spreadsheet import csv_line

    return csv_line(row)


# Query ids PostgreSQL cannot write as the Python writer does: in JSON, those with non-ASCII or control
# characters (to_json leaves them, json.dumps escapes them); in CSV, cells that get quotes or the
# formula guard. The database keeps whitespace out of ids and configuration names, so no cell holds the
# carriage return that makes csv_line quote a whole line.
_SPECIAL_QUERIES = {
    "jsonl": ("q.external_id !~ %s", pgtext.PLAIN_ASCII),
    "csv": ("q.external_id ~ %s", pgtext.CSV_SPECIAL),
}


def _encoded_queries(pool: Pool, fmt: str) -> tuple[list[int], list[str]]:
    """(query pks, their cells) for the pool's query ids that `_SPECIAL_QUERIES` picks, encoded here."""
    encode = json.dumps if fmt == "jsonl" else pgtext.csv_cell
    special, pattern = _SPECIAL_QUERIES[fmt]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT q.id, q.external_id FROM judgments_query q WHERE q.pool_id = %s AND {special}",
            [pool.pk, pattern],
        )
        found = cursor.fetchall()
    return [pk for pk, _ in found], [encode(qid) for _, qid in found]


def _concat(parts: list[str]) -> str:
    """concat() of the parts, nested: PostgreSQL takes at most 100 arguments a function call."""
    chunks = [", ".join(parts[i : i + 90]) for i in range(0, len(parts), 90)]
    return "concat(" + ", ".join(f"concat({chunk})" for chunk in chunks) + ")"


def _query_lines_sql(
    configuration: str,
    flavour: str,
    run_id: int,
    fmt: str,
    lookup: tuple[list[int], list[str]],
    query_ids=None,
) -> tuple[str, list]:
    """COPY-able SQL of one (configuration, flavour): the lines of its queries (by id) exactly as
    `_json_line`/`_csv_line` write them, or, for a row holding a value out of `python_float`'s range,
    one marker line `<TAB>#{values}<TAB>query id` for Python to write (no line holds a raw tab: ids and
    names have no whitespace, JSON escapes it)."""
    values = [f"s.{field}" for field in _FIELDS]
    text = {field: f"t.{field}" for field in _FIELDS}  # each value's text, made once per row
    if fmt == "jsonl":
        plain = "to_json(q.external_id)::text"
        head = f'{{"configuration": {json.dumps(configuration)}, "query": '
        null = "null"

        def middle(metric: str) -> str:
            return f', "flavor": {json.dumps(flavour)}, "metric": {json.dumps(metric)}, "value": '

        judged_at, end = ', "judged": ', "}"
    else:
        plain = "q.external_id"
        head = pgtext.csv_cell(configuration) + ","
        null = ""

        def middle(metric: str) -> str:
            return f",{pgtext.csv_cell(flavour)},{pgtext.csv_cell(metric)},"

        judged_at, end = ",", ""
    params: list = []
    parts: list[str] = []
    for metric in _LINE_METRICS:
        judged = judged_metric(metric)
        parts += ["%s", "t.qtext", "%s", text[MEAN_FIELDS[metric]]]
        params += [head, middle(metric)]
        if judged:
            parts += ["%s", text[JUDGED_FIELDS[judged]], "%s"]
            params += [judged_at, end + "\n"]
        else:
            parts += ["%s"]
            params += [judged_at + null + end + "\n"]
    params[-1] = params[-1][:-1]  # the last line's newline is the end of the COPY row
    in_range = " AND ".join(pgtext.float_in_range(v) for v in values)
    texts = ", ".join(
        f"{pgtext.python_float(v)} AS {field}" for v, field in zip(values, _FIELDS, strict=True)
    )
    in_segment = "" if query_ids is None else " AND s.query_id = ANY(%s)"
    # OFFSET 0 keeps the inner query whole, so that each value is formatted once, not once per use. The
    # lines of 64 queries make one COPY row: Python handles 80 rows for 5,000 queries, not 5,000.
    sql = f"""
        SELECT string_agg(
            CASE WHEN t.ok THEN {_concat(parts)} ELSE concat(E'\\t#', t.raw, E'\\t', t.qid) END,
            E'\\n' ORDER BY {by_id("t.qid")})
        FROM (
            SELECT q.external_id AS qid, COALESCE(e.text, {plain}) AS qtext, COALESCE({in_range}, false) AS ok,
                   CASE WHEN NOT COALESCE({in_range}, false) THEN ARRAY[{", ".join(values)}]::text END AS raw,
                   row_number() OVER (ORDER BY {by_id("q.external_id")}) / 64 AS block, {texts}
            FROM {QueryScore._meta.db_table} s
            JOIN judgments_query q ON q.id = s.query_id
            LEFT JOIN {pgtext.encoded_lookup("e")} ON e.id = q.id
            WHERE s.run_id = %s AND s.flavor = %s{in_segment}
            OFFSET 0
        ) t
        GROUP BY t.block
        ORDER BY t.block
    """
    segment = [] if query_ids is None else [[int(q) for q in query_ids]]
    return sql, [*params, *lookup, run_id, flavour, *segment]
