"""A pool's own measure set on the comparison surfaces the fixed set had alone: the matrix of three or
more configurations (`matrix_page`) and the tables of the comparison CSV (`compare_table`: ?table=metrics|queries|
means|matrix; `downloads.compare_csv` writes them). Every figure is read from MeasureScore rows (scoring.measure_compare)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from judgments.models import Pool, Query

from .. import comparison, measure_compare, segments
from ..comparison import ComparisonError
from ..measure_reads import run_means
from ..measures.compute import columns
from ..measures.names import Measure
from . import segments as segment_views
from .common import query_string


def _number(value) -> str:
    return "" if value is None or value != value else repr(float(value))


def _urls(pool: Pool, configurations, metric: str, tags=()) -> dict:
    names = [c.name for c in configurations]
    csv_base = reverse("scoring:compare-csv", args=[pool.name])
    return {
        "csv": {
            table: csv_base + query_string(c=names, metric=metric, table=table, tag=list(tags))
            for table in ("metrics", "queries", "means", "matrix")
        }
    }


def matrix_page(
    request: HttpRequest, found: Pool, measures: list[Measure], selected, segment_filter=None
) -> HttpResponse:
    """Every pair of the picked configurations on one measure of the set (?metric=), Holm over the matrix;
    with a segment (?tag=, segment_filter: views.segments.SegmentFilter), over its queries only."""
    measure = measure_compare.pick(measures, request.GET.get("metric"))
    seg = segment_filter.seg if segment_filter is not None else None
    tags = segment_views.picked_tags(segment_filter)
    try:
        if seg is not None and not seg.n:
            raise ComparisonError(f"No query of pool {found.name} is in segment {seg.label}.")
        result = measure_compare.matrix(
            selected, measures, measure, query_ids=None if seg is None else seg.query_ids
        )
    except ComparisonError as error:
        messages.error(request, str(error))
        return redirect(reverse("scoring:leaderboard", args=[found.name]) + query_string(tag=tags))
    base = reverse("scoring:compare", args=[found.name])
    grid = [
        (
            row,
            [
                (
                    cell,
                    base + query_string(c=[cell.column.name, cell.row.name], metric=measure.name, tag=tags),
                )
                if cell
                else (None, None)
                for cell in cells
            ],
        )
        for row, cells in result.grid()
    ]
    n = len(result.configurations)
    return render(
        request,
        "scoring/compare_matrix.html",
        {
            "pool": found,
            "matrix": result,
            "matrix_label": measure.name,
            "grid": grid,
            "measures": measures,
            "measure": measure,
            "selected": selected,
            "pairs": n * (n - 1) // 2,
            "n_resamples": comparison.N_RESAMPLES,
            "threshold": comparison.JUDGED_THRESHOLD,
            "urls": _urls(found, result.configurations, measure.name, tags),
            "leaderboard_url": reverse("scoring:leaderboard", args=[found.name]) + query_string(tag=tags),
            "segment_filter": segment_filter,
        },
    )


def compare_table(
    request: HttpRequest, measures: list[Measure], selected, seg: segments.Segment | None = None
) -> tuple[str, list, list]:
    """(file name, header, rows) of the comparison CSV of a measure-set pool: `metrics` (two
    configurations: every measure's means, CIs, difference, tests), `queries` (two: one measure per
    query), `means` (every column's mean per configuration, for the fixed set's `cutoffs`), `matrix`
    (pairs on one measure); with a segment (?tag=), over its queries' rows only. ComparisonError for runs
    without scores (or none in the segment), Http404 for an unknown table."""
    found = selected[0].pool
    query_ids = None if seg is None else seg.query_ids
    if seg is not None and not seg.n:
        raise ComparisonError(f"No query of pool {found.name} is in segment {seg.label}.")
    measure = measure_compare.pick(measures, request.GET.get("metric"))
    table = request.GET.get("table", "metrics")
    if table == "cutoffs":
        table = "means"  # a measure set has no fixed cut-offs: every column's mean instead
    names = "-vs-".join(c.name for c in selected)
    if table == "means":
        runs = measure_compare.current_runs(selected)
        means = run_means([r.pk for r in runs.values()], measures, query_ids)
        rows = [
            [c.name, column, _number(means[runs[c.pk].pk].means[column])]
            for c in selected
            if runs[c.pk].pk in means
            for column in columns(measures)
        ]
        return f"means-{names}.csv", ["configuration", "metric", "mean"], rows
    if table == "matrix":
        result = measure_compare.matrix(selected, measures, measure, query_ids=query_ids)
        rows = [
            [cell.row.name, cell.column.name, measure.name, cell.n, _number(cell.diff), _number(cell.p_randomization),
             _number(cell.p_holm), _number(cell.p_t), _number(cell.p_t_holm)]
            for _, cells in result.grid() for cell in cells if cell
        ]  # fmt: skip
        header = ["row", "column", "metric", "queries", "difference_row_minus_column", "p_randomization",
                  "p_randomization_holm", "p_t", "p_t_holm"]  # fmt: skip
        return f"matrix-{found.name}-{measure.name}.csv", header, rows
    if len(selected) != 2 or table not in ("metrics", "queries"):
        raise Http404("Unknown table, or it needs exactly two configurations.")
    a, b = selected
    paired = measure_compare.pair_rows(a, b, measures, query_ids)
    if table == "metrics":
        header = ["metric", "queries", "mean_a", "ci_a_low", "ci_a_high", "mean_b", "ci_b_low", "ci_b_high",
                  "difference_b_minus_a", "ci_difference_low", "ci_difference_high", "p_randomization", "p_t",
                  "wins_b", "ties", "losses_b", "a", "b"]  # fmt: skip
        rows = [
            [m.name, r.n, *map(_number, (r.mean_a, *r.ci_a, r.mean_b, *r.ci_b, r.diff, *r.ci_diff, r.p_randomization,
             r.p_t)), r.wins, r.ties, r.losses, a.name, b.name]
            for m, r in zip(measures, paired.results(measures), strict=True)
        ]  # fmt: skip
        return f"compare-{names}-measures.csv", header, rows
    column = paired.names.index(measure.name)
    va, vb = paired.a[:, column], paired.b[:, column]
    d = vb - va
    judged = paired.judged(measure)
    external = dict(Query.objects.filter(pk__in=paired.query_ids.tolist()).values_list("pk", "external_id"))
    header = ["query", "metric", f"a:{a.name}", f"b:{b.name}", "difference_b_minus_a", "judged_a", "judged_b"]
    rows = [
        [external[int(paired.query_ids[i])], measure.name, _number(va[i]), _number(vb[i]), _number(d[i]),
         "" if judged is None else _number(judged[0][i]), "" if judged is None else _number(judged[1][i])]
        for i in d.argsort(kind="stable")
    ]  # fmt: skip
    return f"queries-{names}-{measure.name}.csv", header, rows
