"""REST API of stored scores (read only): engineers and admins of a pool; raters and others get 403."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from judgments import access
from judgments.api import IsEngineer, problems_response
from judgments.problems import Problem

from . import exports, metrics, segments
from .flavours import FLAVOUR_PARAMS, flavour_param
from .measure_reads import values_by_cell
from .models import JUDGED_FIELDS, MEAN_FIELDS, QueryScore

NUMBERS = {"type": "object", "additionalProperties": {"type": "number"}}


class QueryScoreSerializer(serializers.ModelSerializer):
    pool = serializers.CharField(source="run.configuration.pool.name")
    configuration = serializers.IntegerField(source="run.configuration_id")
    configuration_name = serializers.CharField(source="run.configuration.name")
    query_id = serializers.CharField(source="query.external_id")
    metrics = serializers.SerializerMethodField()
    judged = serializers.SerializerMethodField()
    measures = serializers.SerializerMethodField()

    class Meta:
        model = QueryScore
        fields = (
            "id",
            "pool",
            "configuration",
            "configuration_name",
            "run",
            "query_id",
            "flavor",
            "has_ranking",
            "has_relevant",
            "metrics",
            "judged",
            "measures",
            "updated_at",
        )
        read_only_fields = fields

    @extend_schema_field(NUMBERS)
    def get_metrics(self, score: QueryScore) -> dict[str, float]:
        # udcg@k included; a NaN (a row stored before UDCG existed, not rescored yet) is null in JSON.
        values = {name: getattr(score, column) for name, column in MEAN_FIELDS.items()}
        return {name: None if value != value else value for name, value in values.items()}

    @extend_schema_field(NUMBERS)
    def get_judged(self, score: QueryScore) -> dict[str, float]:
        return {name: getattr(score, column) for name, column in JUDGED_FIELDS.items()}

    @extend_schema_field({**NUMBERS, "nullable": True})
    def get_measures(self, score: QueryScore) -> dict[str, float] | None:
        """The pool's own measure set for this (run, query), by canonical name (null without a set); the
        list reads them for a whole page at once (ScoreViewSet.list)."""
        cells = self.context.get("measure_cells")
        if cells is None:
            cells = values_by_cell([score])
        values = cells.get((score.run_id, score.query_id))
        return None if values is None else {k: None if v != v else v for k, v in values.items()}


def _param(request: Request, name: str) -> str | None:
    if name in FLAVOUR_PARAMS:  # ?flavor= or ?flavour=
        return flavour_param(request.query_params)
    value = request.query_params.get(name)
    return value if value not in (None, "") else None


FLAVOR_PARAM = OpenApiParameter("flavor", str, enum=list(metrics.FLAVOURS))


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("pool", str, description="pool name"),
            OpenApiParameter("configuration", int, description="configuration id"),
            FLAVOR_PARAM,
            OpenApiParameter("query", str, description="query id"),
            OpenApiParameter("run", int, description="a run id (default: each configuration's current run)"),
            OpenApiParameter(
                "tag",
                str,
                many=True,
                description="only queries with this tag (repeat: with every one of them)",
            ),
        ]
    )
)
class ScoreViewSet(viewsets.ReadOnlyModelViewSet):
    """Stored per-query scores, shown one row per (run, query, flavour) with every metric of the fixed set,
    and `measures`: the pool's own measure set for that (run, query) (null for a pool without one). Without
    `run`, only each configuration's current run."""

    serializer_class = QueryScoreSerializer
    permission_classes = [permissions.IsAuthenticated, IsEngineer]

    def get_queryset(self):
        rows = QueryScore.objects.filter(
            run__configuration__pool__in=access.scored_pools_for(self.request.user)
        ).select_related("run__configuration__pool", "query")
        params = self.request.query_params
        if self.action == "list":
            if (run := _param(self.request, "run")) is not None:
                rows = rows.filter(run_id=run) if run.isdigit() else rows.none()
            else:
                rows = rows.current()
        if (pool := _param(self.request, "pool")) is not None:
            rows = rows.filter(run__configuration__pool__name=pool)
        if (configuration := params.get("configuration")) not in (None, ""):
            rows = (
                rows.filter(run__configuration_id=configuration) if configuration.isdigit() else rows.none()
            )
        if (flavor := _param(self.request, "flavor")) is not None:
            rows = rows.filter(flavor=flavor)
        if (query := _param(self.request, "query")) is not None:
            rows = rows.filter(query__external_id=query)
        if tags := self.request.query_params.getlist("tag"):
            rows = rows.filter(query__tags__contains=tags)  # tags @> ARRAY[...]: the GIN index
        return rows.order_by("run__configuration__name", "flavor", "query__external_id", "id")

    @extend_schema(
        summary="trec_eval -q style text of one run's scores (streamed)",
        parameters=[
            OpenApiParameter("run", int, required=True, description="run id"),
            OpenApiParameter(
                "flavor", str, enum=list(metrics.FLAVOURS), description="default trec (trec_eval's numbers)"
            ),
        ],
        responses={200: OpenApiResponse(OpenApiTypes.STR, description="measure<TAB>query<TAB>value lines")},
    )
    @action(detail=False, methods=["get"], url_path="trec-eval", serializer_class=None)
    def trec_eval(self, request: Request):
        run_id = _param(request, "run")
        if run_id is None or not run_id.isdigit():
            return problems_response("Give ?run=<run id>.", [Problem(0, "run", "a run id is required")])
        run = get_object_or_404(
            access.runs_for(request.user).select_related("configuration__pool"), pk=run_id
        )
        flavour = _param(request, "flavor") or "trec"
        if flavour not in metrics.FLAVOURS:
            return problems_response(
                "Unknown flavour.", [Problem(0, "flavor", f"one of {', '.join(metrics.FLAVOURS)}")]
            )
        return _stream(
            exports.trec_eval_q_lines(run, flavour), exports.trec_eval_q_filename(run, flavour), "text/plain"
        )

    @extend_schema(
        summary="Every stored score of a pool's current runs, as JSON lines or CSV (streamed)",
        parameters=[
            OpenApiParameter("pool", str, required=True, description="pool name"),
            OpenApiParameter("flavor", str, enum=list(metrics.FLAVOURS)),
            OpenApiParameter(
                "as", str, enum=list(exports.SCORE_FORMATS), description="jsonl (default) or csv"
            ),
            OpenApiParameter(
                "tag",
                str,
                many=True,
                description="only queries with this tag, 'all' means over them (repeat: with every one)",
            ),
        ],
        responses={
            200: OpenApiResponse(OpenApiTypes.STR, description="one row per configuration, query, metric")
        },
    )
    @action(detail=False, methods=["get"], url_path="export", serializer_class=None)
    def export(self, request: Request):
        name = _param(request, "pool")
        pool = access.get_pool_or_404(request.user, access.scored_pools_for, name=name or "")
        flavour = _param(request, "flavor") or metrics.DEFAULT_FLAVOUR
        fmt = _param(request, "as") or "jsonl"
        if flavour not in metrics.FLAVOURS or fmt not in exports.SCORE_FORMATS:
            return problems_response("Unknown flavour or format.", [Problem(0, "flavor", "see the schema")])
        content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
        segment = None
        if tags := request.query_params.getlist("tag"):
            try:
                segment = segments.export_segment(pool, tags)
            except segments.SegmentError as error:
                return problems_response(f"{error}.", [Problem(0, "tag", str(error))])
        return _stream(
            exports.score_lines(pool, flavour, fmt, segment=segment),
            f"{pool.name}.scores.{flavour}.{fmt}",
            content_type,
        )

    # Last in the class body: a method named `list` would shadow the builtin in the decorators above.
    def list(self, request: Request, *args, **kwargs):
        """The page's rows, with the measure-set values of all of them read at once (values_by_cell)."""
        rows = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(rows)
        shown = list(page if page is not None else rows)
        context = {**self.get_serializer_context(), "measure_cells": values_by_cell(shown)}
        data = self.get_serializer_class()(shown, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)


def _stream(chunks, filename: str, content_type: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
