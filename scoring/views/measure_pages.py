"""Pages of a pool's own measure set (scoring.measure_sets): the settings page that sets it, and the
leaderboard, comparison and run history that show it (the leaderboard, compare and history views hand over to these when the pool has
a set). Every figure is read from MeasureScore rows; nothing recomputes a measure on page load."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from judgments import access
from judgments.models import Pool, Run, SearchConfiguration

from .. import segments
from ..measure_exports import current_runs
from ..measure_reads import query_ids_by_pk, run_means, run_values
from ..measure_sets import MeasureError, measure_set, reset_measures, set_measures
from ..measures.compute import columns, judged_column, residual_name
from ..measures.names import Measure, accepted_forms
from ..stats import compare_many
from ..templatetags import scoring_tags as fmt
from . import segments as segment_views
from .common import query_string, scored_pool_or_404

TOP_QUERIES = 15
DEFAULT_SHOWN = 8  # leaderboard columns shown when the engineer has not picked any


def settings_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    """GET: the pool's measure set in a text box, one name a line. POST: replace it (and re-score), or
    `default` to go back to today's fixed set. A bad name: the page again with its one line, status 400,
    nothing stored."""
    found = scored_pool_or_404(request, pool_name)
    current = measure_set(found)
    text = "\n".join(m.name for m in current) if current else ""
    error = None
    if request.method == "POST":
        if request.POST.get("default"):
            reset_measures(found)
            messages.success(request, "The pool is back on today's fixed set of metrics.")
            return redirect("scoring:measures", found.name)
        text = request.POST.get("measures", "")
        names = [line.strip() for line in text.splitlines() if line.strip()]
        try:
            chosen, summary = set_measures(found, names)
        except MeasureError as exc:
            error = str(exc)
        else:
            messages.success(
                request, f"{len(chosen)} measures set; {summary.rows} (run, query) cells re-scored."
            )
            return redirect("scoring:measures", found.name)
    return render(
        request,
        "scoring/measures.html",
        {
            "pool": found,
            "current": current,
            "text": text,
            "error": error,
            "accepted": accepted_forms(),
            "leaderboard_url": reverse("scoring:leaderboard", args=[found.name]),
        },
        status=400 if error else 200,
    )


def _shown(request: HttpRequest, measures: list[Measure]) -> list[Measure]:
    """The measures picked with ?m=name (in the set's order); default: the first DEFAULT_SHOWN."""
    picked = set(request.GET.getlist("m"))
    shown = [m for m in measures if m.name in picked]
    return shown or measures[:DEFAULT_SHOWN]


def leaderboard(request: HttpRequest, found: Pool, measures: list[Measure]) -> HttpResponse:
    """Mean of each picked measure over each configuration's current run, with Judged@k (or RBP's
    residual) beside it, sorted by the first picked measure."""
    shown = _shown(request, measures)
    runs = current_runs(found)
    segment_filter = segment_views.read_filter(request, found)  # ?tag=: the segment's queries only
    query_ids = None if segment_filter is None else segment_filter.query_ids
    means = run_means([run_id for _, run_id in runs], measures, query_ids)
    configurations = {c.name: c for c in found.configurations.select_related("team")}
    rows = []
    for name, run_id in runs:
        m = means.get(run_id)
        cells = []
        for measure in shown:
            value = None if m is None else m.means[measure.name]
            side = judged_column(measure) if measure.family != "RBP" else residual_name(measure)
            side_value = None if m is None or side is None else m.means[side]
            cells.append(
                {
                    "sort": fmt.sortvalue(value),
                    "text": fmt.score(value),
                    "side_label": side if side else "",
                    "side_text": ("±" + fmt.score(side_value))
                    if measure.family == "RBP"
                    else fmt.pct(side_value),
                }
            )
        rows.append({"configuration": configurations[name], "run_id": run_id, "means": m, "cells": cells})
    rows.sort(key=lambda r: -(r["means"].means[shown[0].name] if r["means"] else -1))
    segment_tables = None
    if segment_filter is not None:
        order = [(r["run_id"], r["configuration"].name) for r in rows]

        def cells(query_ids):
            return segments.measure_cells(
                [r for r, _ in order], measures, measures.index(shown[0]), query_ids
            )

        segment_tables = segment_views.board_tables(
            segment_filter, request, found, order, cells, shown[0].name
        )
    return render(
        request,
        "scoring/measure_leaderboard.html",
        {
            "pool": found,
            "measures": measures,
            "shown": shown,
            "shown_names": {m.name for m in shown},
            "rows": rows,
            "settings_url": reverse("scoring:measures", args=[found.name]),
            "csv_url": reverse("scoring:leaderboard-csv", args=[found.name]) + "?" + request.GET.urlencode(),
            "segment_filter": segment_filter,
            "segment_tables": segment_tables,
        },
    )


def leaderboard_table(found: Pool, measures: list[Measure], query_ids=None) -> tuple[list[str], list[list]]:
    """The leaderboard CSV: configuration, team, run, queries, then every column of the set (means over
    the queries of `query_ids` only, when given: a segment)."""
    names = columns(measures)
    runs = current_runs(found)
    means = run_means([run_id for _, run_id in runs], measures, query_ids)
    teams = dict(found.configurations.values_list("name", "team__name"))
    out = []
    for name, run_id in runs:
        m = means.get(run_id)
        out.append(
            [
                name,
                teams.get(name),
                run_id,
                m.n_queries if m else 0,
                *[m.means[c] if m else None for c in names],
            ]
        )
    return ["configuration", "team", "run", "queries", *names], out


def compare(
    request: HttpRequest,
    found: Pool,
    measures: list[Measure],
    selected: list[SearchConfiguration],
    segment_filter: segment_views.SegmentFilter | None = None,
):
    """Two configurations on every measure of the set: means, 95% bootstrap CIs, paired randomization
    test, wins/ties/losses; then the queries that moved most on the headline measure (?metric=). With a
    segment (?tag=), all of it over the segment's queries, and a breakdown of the headline by tag."""
    headline = next((m for m in measures if m.name == request.GET.get("metric")), measures[0])
    a, b = selected[0], selected[1]
    runs = {c.pk: Run.objects.filter(configuration=c).order_by("-id").first() for c in (a, b)}
    missing = [c.name for c in (a, b) if runs[c.pk] is None]
    if missing:
        messages.error(request, f"No run yet for {', '.join(missing)}.")
        return redirect(reverse("scoring:compare", args=[found.name]))
    stored = run_values([r.pk for r in runs.values()], measures)
    ra, rb = stored.get(runs[a.pk].pk), stored.get(runs[b.pk].pk)
    if ra is None or rb is None:
        messages.error(request, "No stored scores yet for one of the two runs.")
        return redirect(reverse("scoring:compare", args=[found.name]))
    common, ia, ib = np.intersect1d(ra.query, rb.query, return_indices=True)
    segment_tables = None
    if segment_filter is not None:
        h = measures.index(headline)
        segment_tables = {
            "pair": segment_views.pair_tables(
                segment_filter, found, common, ra.values[ia, h], rb.values[ib, h], headline.name
            )
        }
        if segment_filter.seg is not None:  # the segment's queries only, from here on
            keep = np.isin(common, segment_filter.seg.query_ids)
            common, ia, ib = common[keep], ia[keep], ib[keep]
    tags = segment_views.picked_tags(segment_filter)
    k = len(measures)
    results = compare_many(ra.values[ia, :k], rb.values[ib, :k])
    table = [
        {"measure": m, "r": r, "significant": r.significant()} for m, r in zip(measures, results, strict=True)
    ]
    h = measures.index(headline)
    diff = rb.values[ib, h] - ra.values[ia, h]
    external = query_ids_by_pk(common.tolist())
    order = np.argsort(diff, kind="stable")
    gains = [(external[int(common[i])], float(diff[i])) for i in order[::-1][:TOP_QUERIES] if diff[i] > 0]
    losses = [(external[int(common[i])], float(diff[i])) for i in order[:TOP_QUERIES] if diff[i] < 0]
    return render(
        request,
        "scoring/measure_compare.html",
        {
            "pool": found,
            "a": a,
            "b": b,
            "measures": measures,
            "headline": headline,
            "sentence": results[h].sentence(headline.name, a.name, b.name),
            "rows": table,
            "n": len(common),
            "gains": gains,
            "losses": losses,
            "leaderboard_url": reverse("scoring:leaderboard", args=[found.name]) + query_string(tag=tags),
            "segment_filter": segment_filter,
            "segment_tables": segment_tables,
            "csv_urls": {
                table: reverse("scoring:compare-csv", args=[found.name])
                + "?"
                + urlencode(
                    [("c", a.name), ("c", b.name), ("metric", headline.name), ("table", table)]
                    + [("tag", tag) for tag in tags]
                )
                for table in ("metrics", "queries")
            },
        },
    )


def history(
    request: HttpRequest, configuration: SearchConfiguration, measures: list[Measure]
) -> HttpResponse:
    """Every run of a configuration with its means of the pool's set, newest first."""
    shown = _shown(request, measures)
    runs = list(configuration.runs.order_by("-id"))
    means = run_means([r.pk for r in runs], measures)
    return render(
        request,
        "scoring/measure_history.html",
        {
            "configuration": configuration,
            "pool": configuration.pool,
            "shown": shown,
            "points": [{"run": r, "means": means.get(r.pk)} for r in runs],
            "leaderboard_url": reverse("scoring:leaderboard", args=[configuration.pool.name]),
        },
    )


def overlap_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    """Two configurations' lists compared without judgments: RBO and Jaccard@10 per query and as means,
    the queries that changed most first, each with a button that queues its documents for rating."""
    from django.http import Http404

    from .. import overlap

    found = scored_pool_or_404(request, pool_name)
    names = list(dict.fromkeys(n for n in request.GET.getlist("c") if n))
    configurations = {
        c.name: c for c in access.configurations_for(request.user).filter(pool=found, name__in=names)
    }
    if len(names) != 2 or len(configurations) != 2:
        raise Http404("Give two configurations of this pool: ?c=A&c=B")
    a, b = configurations[names[0]], configurations[names[1]]
    try:
        result = overlap.overlap(a, b)
    except overlap.OverlapError as exc:
        messages.error(request, str(exc))
        return redirect(reverse("scoring:leaderboard", args=[found.name]))
    return render(
        request,
        "scoring/overlap.html",
        {
            "pool": found,
            "result": result,
            "rows": result.rows[:200],
            "may_queue": access.may_queue(request.user, found),
            "leaderboard_url": reverse("scoring:leaderboard", args=[found.name]),
        },
    )


def overlap_queue(request: HttpRequest, pool_name: str) -> HttpResponse:
    """POST: queue one query's documents of both configurations' top 10 (see overlap_page)."""
    from django.core.exceptions import PermissionDenied
    from django.http import Http404, HttpResponseNotAllowed

    from judgments.rating.queue import QueueError

    from .. import overlap

    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    found = scored_pool_or_404(request, pool_name)
    if not access.may_queue(request.user, found):
        raise PermissionDenied
    names = request.POST.getlist("c")
    configurations = {
        c.name: c for c in access.configurations_for(request.user).filter(pool=found, name__in=names)
    }
    if len(names) != 2 or len(configurations) != 2:
        raise Http404("Give two configurations of this pool")
    query = request.POST.get("query", "")
    try:
        result = overlap.queue_query(configurations[names[0]], configurations[names[1]], query)
    except (overlap.OverlapError, QueueError) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{query}: {result.newly_queued} pair(s) newly queued for rating, {result.already_queued} already "
            f"queued, {result.complete} already graded.",
        )
    target = reverse("scoring:overlap", args=[found.name]) + f"?c={names[0]}&c={names[1]}"
    return redirect(target)


def query_measure_rows(
    found: Pool, a: SearchConfiguration, b: SearchConfiguration, query
) -> list[dict] | None:
    """The per-query page's rows for a pool with its own set: every column (measures, Judged@k, RBP
    residuals) of both current runs for this query (None without a set or a stored row)."""
    measures = measure_set(found)
    if measures is None:
        return None
    runs = {
        c.pk: Run.objects.filter(configuration=c).order_by("-id").values_list("id", flat=True).first()
        for c in (a, b)
    }
    stored = run_values([r for r in runs.values() if r], measures, [query.pk])
    va, vb = stored.get(runs[a.pk]), stored.get(runs[b.pk])
    rows = []
    for i, name in enumerate(columns(measures)):
        x = None if va is None else float(va.values[0, i])
        y = None if vb is None else float(vb.values[0, i])
        rows.append({"name": name, "a": x, "b": y, "diff": None if x is None or y is None else y - x})
    return rows
