"""REST API of query segments (scoring.segments), read only, for the engineers and admins of a pool:

- GET /api/segments/<pool>/?tag=T[&tag=U][&flavor=F][&metric=M]
  the segment (the queries carrying every tag given; none: every query), and each configuration's current
  run with its means over the segment's stored rows: every metric of the fixed set in the flavour, or
  every column of the pool's measure set; then `breakdown`: every tag of the pool with its n and each
  configuration's mean of `metric` (default ndcg@10, or the set's first measure), with `?breakdown=1`
  only (it reads every stored score of the current runs: ~0.8 s on 50 configurations x 5,000 queries).

The same numbers as the pages and `manage.py export_scores --tag` (its "all" lines). Per-query rows of a
segment: `/api/scores/?pool=P&tag=T`, `/api/scores/export/?pool=P&tag=T`,
`/api/measure-sets/<pool>/scores/?tag=T`. A bad tag: 400 with one line naming it."""

from __future__ import annotations

import math

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from judgments import access
from judgments.api import IsEngineer, problems_response
from judgments.problems import Problem

from . import comparison, segments
from .flavours import DEFAULT_FLAVOUR, FLAVOURS, flavour_param
from .leaderboard import ALL_METRICS, pool_means
from .measure_exports import current_runs
from .measure_reads import run_means as measure_means
from .measure_sets import measure_set
from .measures.compute import columns


def _number(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


class SegmentViewSet(viewsets.ViewSet):
    permission_classes = [permissions.IsAuthenticated, IsEngineer]
    lookup_field = "pool"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        summary="Means of each configuration over a segment of queries (?tag=), and the breakdown by tag",
        parameters=[
            OpenApiParameter(
                "tag", str, many=True, description="queries with this tag (repeat: with every one)"
            ),
            OpenApiParameter("flavor", str, enum=list(FLAVOURS), description="fixed set only"),
            OpenApiParameter("metric", str, description="the breakdown's metric"),
            OpenApiParameter(
                "breakdown",
                bool,
                description="1: add the breakdown by tag (reads every stored score of the current runs)",
            ),
        ],
    )
    def retrieve(self, request: Request, pool: str):
        found = access.get_pool_or_404(request.user, access.scored_pools_for, name=pool)
        tags = [t for t in request.query_params.getlist("tag") if t != ""]
        if len(tags) != len(request.query_params.getlist("tag")):
            return problems_response("tag: a tag is empty.", [Problem(0, "tag", "a tag is empty")])
        try:
            seg = segments.segment(found, tags) if tags else None
        except segments.SegmentError as error:
            return problems_response(f"{error}.", [Problem(0, "tag", str(error))])
        measures = measure_set(found)
        if measures is None:
            body = self._fixed(request, found, seg)
        else:
            body = self._measures(request, found, measures, seg)
        if isinstance(body, Response):
            return body
        body.update(
            {
                "pool": found.name,
                "tags": list(seg.tags) if seg else [],
                "n_queries": seg.n if seg else None,
            }
        )
        return Response(body)

    def _fixed(self, request: Request, found, seg):
        flavour = flavour_param(request.query_params) or DEFAULT_FLAVOUR
        metric = request.query_params.get("metric") or comparison.HEADLINE_METRIC
        if flavour not in FLAVOURS:
            return problems_response(
                "Unknown flavour.", [Problem(0, "flavor", f"one of {', '.join(FLAVOURS)}")]
            )
        if metric not in ALL_METRICS:
            return problems_response(
                "Unknown metric.", [Problem(0, "metric", f"one of {', '.join(ALL_METRICS)}")]
            )
        rows = [row for row in pool_means(found, flavour) if row.run_id is not None]
        if seg is not None:
            means = segments.run_means([row.run_id for row in rows], flavour, ALL_METRICS, seg)
        else:
            means = {row.run_id: row.current for row in rows if row.current is not None}
        order = [(row.run_id, row.configuration.name) for row in rows]
        out = []
        for run_id, name in order:
            m = means.get(run_id)
            if m is None:
                continue
            out.append(
                {
                    "configuration": name,
                    "run": run_id,
                    "queries": m.n_queries,
                    "unranked": m.n_unranked,
                    "means": {k: _number(v) for k, v in m.means.items()},
                }
            )
        body = {"flavor": flavour, "configurations": out}
        if request.query_params.get("breakdown") in ("1", "true"):
            cells = segments.cell_values([r for r, _ in order], flavour, metric)
            body["breakdown"] = self._breakdown(found, order, *cells, metric)
        return body

    def _measures(self, request: Request, found, measures, seg):
        names = [m.name for m in measures]
        metric = request.query_params.get("metric") or names[0]
        if metric not in names:
            return problems_response("Unknown measure.", [Problem(0, "metric", f"one of {', '.join(names)}")])
        runs = current_runs(found)
        means = measure_means([r for _, r in runs], measures, None if seg is None else seg.query_ids)
        out = [
            {
                "configuration": name,
                "run": run_id,
                "queries": means[run_id].n_queries,
                "unranked": means[run_id].n_unranked,
                "means": {k: _number(v) for k, v in means[run_id].means.items()},
            }
            for name, run_id in runs
            if run_id in means
        ]
        order = [(run_id, name) for name, run_id in runs]
        body = {"columns": columns(measures), "configurations": out}
        if request.query_params.get("breakdown") in ("1", "true"):
            cells = segments.measure_cells([r for r, _ in order], measures, names.index(metric))
            body["breakdown"] = self._breakdown(found, order, *cells, metric)
        return body

    @staticmethod
    def _breakdown(found, order, queries, matrix, metric) -> dict:
        tags = [tag for tag, _ in segments.pool_tags(found)]
        member = segments.tag_membership(found, tags, queries)
        rows = segments.breakdown(tags, [r for r, _ in order], queries, matrix, member)
        names = dict(order)
        return {
            "metric": metric,
            "tags": [
                {"tag": r.tag, "n": r.n, "means": {names[run]: _number(v) for run, v in r.means.items()}}
                for r in rows
            ],
        }
