"""REST API of a pool's own measure set (scoring.measure_sets) and of its stored values:

- GET  /api/measure-sets/<pool>/        the set (canonical names; `default: true` for today's fixed set)
- PUT  /api/measure-sets/<pool>/        {"measures": ["nDCG@10", "P(rel=2)@5", ...]} replaces it and
                                        re-scores; a bad name: 400 with one line, nothing stored;
                                        {"measures": []} or DELETE goes back to the fixed set
- GET  /api/measure-sets/<pool>/scores/ per-query values of each configuration's current run (or ?run=)
                                        and the means, keyed by canonical name (?query= for one query)

Engineers and admins of the pool (others: 404 for the pool, 403 without the role)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from judgments import access
from judgments.api import IsEngineer, problems_response
from judgments.exchange.formats import Problem
from judgments.models import Pool, Run

from . import segments
from .measure_exports import current_runs
from .measure_reads import query_ids_by_pk, run_values
from .measure_sets import MeasureError, measure_set, reset_measures, set_measures
from .measures.compute import columns

SET_BODY = inline_serializer("MeasureSet", {"measures": serializers.ListField(child=serializers.CharField())})


class MeasureSetViewSet(viewsets.ViewSet):
    permission_classes = [permissions.IsAuthenticated, IsEngineer]
    lookup_field = "pool"
    lookup_value_regex = r"[^/]+"

    def _pool(self, name: str) -> Pool:
        return access.get_pool_or_404(self.request.user, access.scored_pools_for, name=name)

    @staticmethod
    def _body(pool: Pool) -> dict:
        measures = measure_set(pool)
        return {
            "pool": pool.name,
            "default": measures is None,
            "measures": [] if measures is None else [m.name for m in measures],
            "columns": [] if measures is None else columns(measures),
        }

    @extend_schema(summary="A pool's measure set (ir_measures names)", responses=SET_BODY)
    def retrieve(self, request: Request, pool: str):
        return Response(self._body(self._pool(pool)))

    @extend_schema(
        summary="Replace a pool's measure set and re-score it", request=SET_BODY, responses=SET_BODY
    )
    def update(self, request: Request, pool: str):
        found = self._pool(pool)
        names = request.data.get("measures") if isinstance(request.data, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return problems_response(
                'Give {"measures": [names]}.', [Problem(0, "measures", "a list of measure names")]
            )
        if not names:
            reset_measures(found)
            return Response(self._body(found))
        try:
            set_measures(found, names)
        except MeasureError as exc:
            return problems_response(str(exc), [Problem(0, "measures", str(exc))])
        return Response(self._body(found))

    @extend_schema(summary="Go back to today's fixed set", responses=SET_BODY)
    def destroy(self, request: Request, pool: str):
        found = self._pool(pool)
        reset_measures(found)
        return Response(self._body(found))

    @extend_schema(
        summary="Stored values of the pool's measure set: per query and means",
        parameters=[
            OpenApiParameter("run", int, description="one run (default: each configuration's current run)"),
            OpenApiParameter("query", str, description="one query id"),
            OpenApiParameter(
                "tag",
                str,
                many=True,
                description="only queries with this tag, means over them (repeat: every one)",
            ),
        ],
    )
    @action(detail=True, methods=["get"])
    def scores(self, request: Request, pool: str):
        found = self._pool(pool)
        measures = measure_set(found)
        if measures is None:
            return problems_response(
                "This pool has today's fixed set: its scores are under /api/scores/.",
                [Problem(0, "pool", "no measure set")],
            )
        run_param = request.query_params.get("run")
        if run_param:
            if not run_param.isdigit():
                return problems_response("Give ?run=<run id>.", [Problem(0, "run", "a run id")])
            run = get_object_or_404(Run.objects.filter(configuration__pool=found), pk=run_param)
            runs = [(run.configuration.name, run.pk)]
        else:
            runs = current_runs(found)
        query_ids = None
        if query := request.query_params.get("query"):
            query_ids = list(found.queries.filter(external_id=query).values_list("pk", flat=True))
        if tags := request.query_params.getlist("tag"):  # a segment (scoring.segments): its queries only
            try:
                seg = segments.segment(found, tags)
            except segments.SegmentError as error:
                return problems_response(f"{error}.", [Problem(0, "tag", str(error))])
            ids = seg.query_ids.tolist()
            query_ids = ids if query_ids is None else [q for q in query_ids if q in set(ids)]
        names = columns(measures)
        stored = run_values([r for _, r in runs], measures, query_ids)
        external = query_ids_by_pk({int(q) for rows in stored.values() for q in rows.query})
        out = []
        for configuration, run_id in runs:
            rows = stored.get(run_id)
            if rows is None:
                continue
            out.append(
                {
                    "configuration": configuration,
                    "run": run_id,
                    "queries": len(rows.query),
                    "means": dict(zip(names, rows.values.mean(axis=0).tolist(), strict=True)),
                    "per_query": {
                        external[int(q)]: dict(zip(names, v.tolist(), strict=True))
                        for q, v in zip(rows.query, rows.values, strict=True)
                    },
                }
            )
        return Response({"pool": found.name, "columns": names, "runs": out})

    @extend_schema(
        summary="Judgment-free comparison of two configurations: RBO (p=0.9) and Jaccard@10 per query",
        parameters=[OpenApiParameter("c", str, many=True, description="two configuration names")],
    )
    @action(detail=True, methods=["get"])
    def overlap(self, request: Request, pool: str):
        from . import overlap

        found = self._pool(pool)
        names = request.query_params.getlist("c")
        configurations = {
            c.name: c for c in access.configurations_for(request.user).filter(pool=found, name__in=names)
        }
        if len(names) != 2 or len(configurations) != 2:
            return problems_response("Give two configurations: ?c=A&c=B.", [Problem(0, "c", "two names")])
        try:
            result = overlap.overlap(configurations[names[0]], configurations[names[1]])
        except overlap.OverlapError as exc:
            return problems_response(str(exc), [Problem(0, "c", str(exc))])
        return Response(
            {
                "a": names[0],
                "b": names[1],
                "p": overlap.RBO_P,
                "k": result.k,
                "mean_rbo": result.mean_rbo,
                "mean_jaccard": result.mean_jaccard,
                "queries": [
                    {"query": r.query, "rbo": r.rbo, "jaccard": r.jaccard, "n_a": r.n_a, "n_b": r.n_b}
                    for r in result.rows
                ],
            }
        )
