"""What the leaderboard and the comparison pages show of query segments (scoring.segments): the tag filter
(`?tag=`, repeatable: the queries carrying every tag), the segment's statistics and the per-tag breakdown,
already formatted for `scoring/_segment_filter.html` and `scoring/_segment_tables.html`. A pool whose
queries carry no tag costs one statement (the pool's tags) and shows nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.contrib import messages
from django.http import HttpRequest

from judgments.models import Pool

from .. import segments
from ..templatetags import scoring_tags as fmt

MAX_BREAKDOWN_TAGS = 40  # columns of the leaderboard's breakdown; the rest are named, not shown


@dataclass
class SegmentFilter:
    """The pool's tags (with their query counts and a link that adds or removes each from the filter),
    and the segment picked (None: every query)."""

    available: list[tuple[str, int]]
    links: list[dict]
    seg: segments.Segment | None
    clear_url: str
    total: int = 0  # the pool's queries with any tag (for "n of N")
    extra: dict = field(default_factory=dict)

    @property
    def tags(self) -> list[str]:
        return [tag for tag, _ in self.available]

    @property
    def query_ids(self) -> np.ndarray | None:
        return None if self.seg is None else self.seg.query_ids


def requested(request: HttpRequest) -> list[str]:
    return [tag for tag in request.GET.getlist("tag") if tag != ""]


def picked_tags(segment_filter: SegmentFilter | None) -> list[str]:
    """The tags of the segment a page shows (none: every query, or a bad tag), for its links."""
    return list(segment_filter.seg.tags) if segment_filter is not None and segment_filter.seg else []


def read_filter(request: HttpRequest, pool: Pool) -> SegmentFilter | None:
    """The filter of this request (None when the pool has no tag and none is asked for). A bad tag: one
    message naming it, and every query is shown."""
    available = segments.pool_tags(pool)
    asked = requested(request)
    if not available and not asked:
        return None
    seg = None
    if asked:
        try:
            seg = segments.segment(pool, asked)
        except segments.SegmentError as error:
            messages.error(request, f"{error}. Showing every query.")
    picked = set(seg.tags) if seg else set()
    links = []
    for tag, n in available:
        params = request.GET.copy()
        now = [t for t in (seg.tags if seg else ()) if t != tag] + ([] if tag in picked else [tag])
        params.setlist("tag", now)
        links.append({"tag": tag, "n": n, "active": tag in picked, "url": "?" + params.urlencode()})
    params = request.GET.copy()
    params.pop("tag", None)
    return SegmentFilter(available, links, seg, "?" + params.urlencode())


def wants_breakdown(request: HttpRequest) -> bool:
    return request.GET.get("breakdown") == "1"


def leaderboard(
    sf: SegmentFilter, request: HttpRequest, pool: Pool, flavour: str, rows: list
) -> tuple[list, dict]:
    """The fixed set's leaderboard rows over the segment (when one is picked) and its segment tables on
    the headline metric (comparison.HEADLINE_METRIC): the segment's spread (its cells only), and the
    breakdown by tag when asked for (every cell of the current runs)."""
    from .. import comparison

    headline = comparison.HEADLINE_METRIC
    if sf.seg is not None:
        metrics = (*comparison.LEADERBOARD_METRICS, comparison.UDCG_METRIC)
        rows = segments.restrict(rows, flavour, metrics, sf.seg, headline)
    order = [(row.run_id, row.configuration.name) for row in rows if row.run_id is not None]
    label = f"{comparison.metric_label(headline)} ({flavour})"

    def cells(query_ids):
        return segments.cell_values([r for r, _ in order], flavour, headline, query_ids)

    return rows, board_tables(sf, request, pool, order, cells, label)


def _cells_text(value: float | None) -> str:
    return fmt.score(value)


def board_tables(
    sf: SegmentFilter, request: HttpRequest, pool: Pool, order: list[tuple[int, str]], cells, label: str
) -> dict:
    """The leaderboard's segment tables for one metric (`label`): each configuration's mean over the segment
    with its 95% CI and p against the leader (when a segment is picked), and the breakdown by tag (when
    asked for: ?breakdown=1). order: (run id, configuration name) in the leaderboard's order; cells(query
    ids or None): (query keys, (queries x runs) cells of that metric)."""
    run_ids = [run_id for run_id, _ in order]
    params = request.GET.copy()
    params["breakdown"] = "0" if wants_breakdown(request) else "1"
    out: dict = {"metric": label, "breakdown_url": "?" + params.urlencode() + "#segments"}
    if sf.seg is not None:
        _, matrix = cells(sf.seg.query_ids)
        board = segments.spread(run_ids, matrix)
        out["spread"] = {
            "n": board.n,
            "n_resamples": board.n_resamples,
            # the smallest p a sign-flip test can give is 1/(R+1); Holm multiplies the smallest by the tests
            "holm_floor": fmt.pvalue(min(1.0, max(0, len(board.runs) - 1) / (board.n_resamples + 1))),
            "rows": [
                {
                    "configuration": name,
                    "mean": fmt.score(s.mean),
                    "ci": f"{fmt.score(s.ci[0])} – {fmt.score(s.ci[1])}",
                    "leader": run_id == board.leader,
                    "p": "" if s.p is None else fmt.pvalue(s.p),
                    "p_holm": "" if s.p_holm is None else fmt.pvalue(s.p_holm),
                    "significant": s.significant,
                }
                for run_id, name in order
                if (s := board.runs.get(run_id)) is not None
            ],
        }
    if not wants_breakdown(request):
        return out
    queries, matrix = cells(None)
    tags = sf.tags[:MAX_BREAKDOWN_TAGS]
    member = segments.tag_membership(pool, tags, queries)
    rows = segments.breakdown(tags, run_ids, queries, matrix, member)
    out["breakdown"] = {
        "tags": [{"tag": r.tag, "n": r.n} for r in rows],
        "hidden": sf.tags[MAX_BREAKDOWN_TAGS:],
        "rows": [
            {"configuration": name, "cells": [_cells_text(r.means.get(run_id)) for r in rows]}
            for run_id, name in order
        ],
    }
    return out


def pair_tables(
    sf: SegmentFilter, pool: Pool, query_ids: np.ndarray, a: np.ndarray, b: np.ndarray, label: str
):
    """The comparison's breakdown: per tag of the pool, n, both means, B − A with its 95% CI, the paired
    randomization p (rows of `a`/`b`: the two runs' cells of `query_ids`, aligned)."""
    tags = sf.tags[:MAX_BREAKDOWN_TAGS]
    member = segments.tag_membership(pool, tags, query_ids)
    return {
        "metric": label,
        "hidden": sf.tags[MAX_BREAKDOWN_TAGS:],
        "rows": [
            {
                "tag": row.tag,
                "n": row.result.n,
                "a": fmt.score(row.result.mean_a),
                "b": fmt.score(row.result.mean_b),
                "diff": fmt.signed(row.result.diff),
                "ci": f"{fmt.signed(row.result.ci_diff[0])} to {fmt.signed(row.result.ci_diff[1])}",
                "p": fmt.pvalue(row.result.p_randomization),
                "significant": row.result.significant() and row.result.diff != 0,
            }
            for row in segments.compare_by_tag(tags, member, a, b)
        ],
    }


def pair_fixed(sf: SegmentFilter, pool: Pool, a, b, flavour: str, metric: str) -> dict:
    """The fixed set's comparison breakdown by tag on `metric` (both current runs' rows, aligned)."""
    from .. import comparison

    paired = comparison.paired_scores(a, b, flavour, (metric,))
    label = f"{comparison.metric_label(metric)} ({flavour})"
    columns = (paired.column(metric, "a"), paired.column(metric, "b"))
    return {"pair": pair_tables(sf, pool, paired.query_ids, *columns, label)}
