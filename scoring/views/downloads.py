"""CSV downloads of the leaderboard, comparison and history pages: every chart's and table's numbers,
at full precision. Same access as the pages (engineers of the pool and admins; others get 404)."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from judgments import access
from judgments.exchange.formats.spreadsheet import csv_line, csv_lines
from judgments.models import Query

from .. import comparison, metrics, segments
from .. import exports as score_exports
from ..comparison import ComparisonError
from ..flavours import flavour_param
from ..measure_sets import measure_set
from ..metrics import CUTOFFS
from ..models import MEAN_FIELDS
from . import measure_matrix, measure_pages
from . import segments as segment_views
from .common import get_option, scored_pool_or_404, selected_configurations


def _csv_response(filename: str, header: list[str], rows) -> HttpResponse:
    """These files are read in spreadsheets: the one CSV writer guards text cells against formulas
    (a configuration named "=HYPERLINK(...)"), numbers such as "-0.031" stay as they are."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    safe = re.sub(r"[^A-Za-z0-9._@-]+", "_", filename)  # names may hold quotes or slashes
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    response.write(csv_line(header))
    response.writelines(csv_lines(rows))
    return response


def _number(value) -> str:
    """CSV cells: full precision, empty for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(float(value)) if isinstance(value, float | np.floating) else str(value)


def requested_segment(request: HttpRequest, pool) -> segments.Segment | None:
    """The segment of ?tag= (repeatable: the queries carrying every tag), None without one; SegmentError
    for a bad tag (the pages' rule, judgments.query_tags). A tag no query carries is an empty segment."""
    tags = segment_views.requested(request)
    return segments.segment(pool, tags) if tags else None


def _bad_tag(error: segments.SegmentError) -> HttpResponse:
    return HttpResponse(f"{error}.", status=400, content_type="text/plain; charset=utf-8")


def _suffix(seg: segments.Segment | None) -> str:
    """The file name's mark of a segment ("-head+category:shoes")."""
    return "" if seg is None else "-" + "+".join(seg.tags)


def leaderboard_csv(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = scored_pool_or_404(request, pool_name)
    try:
        seg = requested_segment(request, found)
    except segments.SegmentError as error:
        return _bad_tag(error)
    if (measures := measure_set(found)) is not None:  # the pool's own measure set: every column of it
        header, table = measure_pages.leaderboard_table(
            found, measures, None if seg is None else seg.query_ids
        )
        rows = [[*row[:4], *(_number(v) for v in row[4:])] for row in table]
        return _csv_response(f"leaderboard-{found.name}-measures.csv", header, rows)
    flavour = get_option(request, "flavour", comparison.check_flavour, warn=False)
    metrics = comparison.LEADERBOARD_METRICS
    header = ["configuration", "team", "flavor", "run_id", "run_created_at"]
    header += [
        *metrics,
        comparison.UDCG_METRIC,
        *(f"judged@{k}" for k in CUTOFFS),
        "queries",
        "queries_without_ranking",
        "previous_run_id",
    ]
    header += [f"change_{m}" for m in metrics]
    rows = []
    board = comparison.leaderboard(found, flavour)
    if seg is not None:
        board = segments.restrict(
            board, flavour, (*metrics, comparison.UDCG_METRIC), seg, comparison.HEADLINE_METRIC
        )
    for row in board:
        rows.append(
            [
                row.configuration.name,
                row.configuration.team.name,
                flavour,
                row.run_id or "",
                row.run_created_at.isoformat() if row.run_created_at else "",
                *(_number(row.mean(m)) for m in metrics),
                _number(row.mean(comparison.UDCG_METRIC)),
                *(_number(row.judged(f"judged@{k}")) for k in CUTOFFS),
                row.current.n_queries if row.current else "",
                row.current.n_unranked if row.current else "",
                row.previous_run_id or "",
                *(_number(row.change(m)) for m in metrics),
            ]
        )
    return _csv_response(f"leaderboard-{found.name}-{flavour}{_suffix(seg)}.csv", header, rows)


def compare_csv(request: HttpRequest, pool_name: str) -> HttpResponse:
    """The numbers behind the comparison page's tables and charts (?table=metrics|queries|cutoffs|matrix);
    with ?tag= (repeatable), over the segment's queries only: its rows, and means and tests over them."""
    found = scored_pool_or_404(request, pool_name)
    selected = selected_configurations(request, found)
    flavour = get_option(request, "flavour", comparison.check_flavour, warn=False)
    metric = get_option(request, "metric", comparison.check_metric, warn=False)
    table = request.GET.get("table", "metrics")
    if len(selected) < 2:
        raise Http404("Pick at least two configurations (?c=...&c=...).")
    try:
        seg = requested_segment(request, found)
    except segments.SegmentError as error:
        return _bad_tag(error)
    if (measures := measure_set(found)) is not None:  # the pool's own measure set (measure_matrix)
        try:
            name, header, rows = measure_matrix.compare_table(request, measures, selected, seg)
        except ComparisonError as error:
            return HttpResponse(str(error), status=409, content_type="text/plain; charset=utf-8")
        return _csv_response(name.removesuffix(".csv") + _suffix(seg) + ".csv", header, rows)
    names = "-vs-".join(c.name for c in selected) + _suffix(seg)
    try:
        if table == "cutoffs":
            if seg is None:
                means = comparison.cutoff_means(selected, flavour)
            else:
                means = segments.cutoff_means(selected, flavour, seg)
            rows = [
                [c.name, flavour, f"ndcg@{k}", _number(v)]
                for c in selected
                for k, v in zip(CUTOFFS, means[c.pk], strict=True)
            ]
            return _csv_response(
                f"cutoffs-{names}-{flavour}.csv", ["configuration", "flavor", "metric", "mean"], rows
            )
        if table == "matrix":
            if seg is None:
                matrix = comparison.pairwise_matrix(selected, flavour, metric=metric)
            else:
                matrix = segments.pairwise_matrix(selected, flavour, seg, metric=metric)
            rows = [
                [cell.row.name, cell.column.name, flavour, metric, cell.n, _number(cell.diff), _number(cell.p_randomization),
                 _number(cell.p_holm), _number(cell.p_t), _number(cell.p_t_holm)]
                for _, cells in matrix.grid() for cell in cells if cell
            ]  # fmt: skip
            header = ["row", "column", "flavor", "metric", "queries", "difference_row_minus_column",
                      "p_randomization", "p_randomization_holm", "p_t", "p_t_holm"]  # fmt: skip
            return _csv_response(f"matrix-{found.name}-{flavour}-{metric}{_suffix(seg)}.csv", header, rows)
        if len(selected) != 2 or table not in ("metrics", "queries"):
            raise Http404("Unknown table, or it needs exactly two configurations.")
        a, b = selected
        if table == "metrics" and seg is None:
            result = comparison.compare_pair(a, b, flavour, metric=metric, metrics=list(MEAN_FIELDS))
        elif table == "metrics":
            result = segments.compare_pair(a, b, flavour, seg, metric=metric, metrics=list(MEAN_FIELDS))
        else:
            paired = comparison.paired_scores(a, b, flavour, (metric,))
            if seg is not None:  # the segment's queries only
                keep = np.isin(paired.query_ids, seg.query_ids)
                paired = replace(
                    paired,
                    query_ids=paired.query_ids[keep],
                    values_a=paired.values_a[keep],
                    values_b=paired.values_b[keep],
                )
    except ComparisonError as error:
        return HttpResponse(str(error), status=409, content_type="text/plain; charset=utf-8")
    if table == "metrics":
        header = ["metric", "flavor", "queries", "mean_a", "ci_a_low", "ci_a_high", "mean_b", "ci_b_low", "ci_b_high",
                  "difference_b_minus_a", "ci_difference_low", "ci_difference_high", "p_randomization", "p_t",
                  "wins_b", "ties", "losses_b", "a", "b"]  # fmt: skip
        rows = []
        for row in result.rows:
            r = row.result
            rows.append([row.metric, flavour, r.n, *map(_number, (r.mean_a, *r.ci_a, r.mean_b, *r.ci_b, r.diff, *r.ci_diff,
                         r.p_randomization, r.p_t)), r.wins, r.ties, r.losses, a.name, b.name])  # fmt: skip
        return _csv_response(f"compare-{names}-{flavour}.csv", header, rows)
    d = paired.differences(metric)
    order = np.argsort(d, kind="stable")
    external = dict(Query.objects.filter(pk__in=paired.query_ids.tolist()).values_list("pk", "external_id"))
    header = [
        "query",
        "flavor",
        "metric",
        f"a:{a.name}",
        f"b:{b.name}",
        "difference_b_minus_a",
        "judged@10_a",
        "judged@10_b",
    ]
    ja, jb = paired.column("judged@10", "a"), paired.column("judged@10", "b")
    va, vb = paired.column(metric, "a"), paired.column(metric, "b")
    rows = [
        [external[int(paired.query_ids[i])], flavour, metric, _number(float(va[i])), _number(float(vb[i])),
         _number(float(d[i])), _number(float(ja[i])), _number(float(jb[i]))]
        for i in order
    ]  # fmt: skip
    return _csv_response(f"queries-{names}-{flavour}-{metric}.csv", header, rows)


def configuration_history_csv(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = access.configuration_or_404(request, configuration_id)
    flavour = get_option(request, "flavour", comparison.check_flavour, warn=False)
    metrics = list(MEAN_FIELDS)
    header = [
        "configuration",
        "run_id",
        "run_created_at",
        "tag",
        "flavor",
        "queries",
        "queries_without_ranking",
    ]
    header += metrics + [f"judged@{k}" for k in CUTOFFS]
    rows = []
    for p in comparison.configuration_history(configuration, flavour):
        s = p.summary
        rows.append(
            [configuration.name, p.run.pk, p.run.created_at.isoformat(), p.run.tag, flavour,
             s.n_queries if s else "", s.n_unranked if s else "",
             *(_number(s.means[m]) if s else "" for m in metrics),
             *(_number(s.judged[f"judged@{k}"]) if s else "" for k in CUTOFFS)]
        )  # fmt: skip
    return _csv_response(f"runs-{configuration.name}-{flavour}.csv", header, rows)


# --- Score files (linked from the pool's export page) ------------------------------------------------


def _download(chunks, filename: str, content_type: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def run_scores_download(request: HttpRequest, run_id: int) -> HttpResponse:
    """trec_eval -q style text of a run's stored scores (engineers of the pool)."""
    run = get_object_or_404(access.runs_for(request.user).select_related("configuration__pool"), pk=run_id)
    flavour = flavour_param(request.GET) or "trec"
    if flavour not in metrics.FLAVOURS:
        raise Http404("No such flavour")
    filename = score_exports.trec_eval_q_filename(run, flavour)
    return _download(score_exports.trec_eval_q_lines(run, flavour), filename, "text/plain; charset=utf-8")


def scores_download(request: HttpRequest, pool_name: str, fmt: str) -> HttpResponse:
    """Every stored score of the pool's current runs (engineers of the pool)."""
    found = access.get_pool_or_404(request.user, access.scored_pools_for, name=pool_name)
    flavour = flavour_param(request.GET) or metrics.DEFAULT_FLAVOUR
    if flavour not in metrics.FLAVOURS or fmt not in score_exports.SCORE_FORMATS:
        raise Http404("No such flavour or format")
    content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
    return _download(
        score_exports.score_lines(found, flavour, fmt), f"{found.name}.scores.{flavour}.{fmt}", content_type
    )
