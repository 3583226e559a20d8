"""REST: pools (with their imports and exports), queries and documents."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.exchange.exports.catalog import POOL_EXPORTS, may_export
from judgments.exchange.exports.stream import ExportError
from judgments.exchange.imports.calls import import_call
from judgments.exchange.imports.checks import dry_run
from judgments.problems import FormatError, Problem

from .. import access, serializers, services
from ..models import Document, Query
from .common import (
    EXPORT_TYPES,
    IMPORT_KINDS,
    POOL_PARAM,
    PROBLEMS_400,
    IsAdminOrReadOnly,
    count_of,
    field_problems,
    format_error_response,
    problems_response,
    query_param,
    stream,
    streamed,
    too_large,
    truthy,
)
from .queue import GoldActions, QueueActions


class PoolViewSet(QueueActions, GoldActions, viewsets.ReadOnlyModelViewSet):
    """Pools the user belongs to (admins: all), by name."""

    serializer_class = serializers.PoolSerializer
    lookup_field = "name"
    lookup_value_regex = r"[^/]+"

    def get_queryset(self):
        return access.pools_for(self.request.user).annotate(
            n_queries=count_of(Query, pool="pk"), n_documents=count_of(Document, pool="pk")
        )

    @extend_schema(
        summary="Download an export of the pool (streamed)",
        description=(
            "kind: "
            + ", ".join(f"`{k}` ({e.title}; {e.audience}s)" for k, e in POOL_EXPORTS.items())
            + ". Combined-grade exports follow the pool's combine rule (see the file name). Raters get 403."
        ),
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(POOL_EXPORTS))],
        responses={
            **streamed(*EXPORT_TYPES),
            400: PROBLEMS_400,
            403: OpenApiResponse(description="Not for your role."),
        },
    )
    @action(detail=True, methods=["get"], url_path=r"export/(?P<kind>[a-z-]+)")
    def export(self, request: Request, name: str, kind: str):
        pool = self.get_object()
        export = POOL_EXPORTS.get(kind)
        if export is None:
            raise Http404(f"No export named {kind}")
        if not may_export(request.user, export):
            raise PermissionDenied("This export is not available to your role.")
        try:
            return stream(export.open(pool, request.user), export.filename(pool), export.content_type)
        except (ExportError, ValueError) as exc:
            return problems_response(str(exc), [Problem(0, "pool", str(exc))])

    @extend_schema(
        summary="Turn the pool's distractor grade (-1) on or off (admins)",
        description=(
            "With it on, raters and model judges may grade a pair -1: a distractor, which looks relevant but "
            "misleads (UDCG counts it as harmful; NDCG and trec_eval as unjudged). It cannot be turned off "
            "while a judgment or final grade of the pool uses it (400, nothing changed)."
        ),
        request=serializers.DistractorsSerializer,
        responses={
            200: serializers.PoolSerializer,
            400: PROBLEMS_400,
            403: OpenApiResponse(description="Admins only."),
        },
    )
    @action(
        detail=True,
        methods=["put"],
        url_path="distractors",
        serializer_class=serializers.DistractorsSerializer,
    )
    def distractors(self, request: Request, name: str):
        pool = self.get_object()
        if not access.is_admin(request.user):
            raise PermissionDenied("Only admins change a pool's settings.")
        form = serializers.DistractorsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            services.set_distractors(pool, form.validated_data["distractors_enabled"])
        except services.JudgmentError as exc:
            return problems_response(str(exc), [Problem(None, "distractors_enabled", str(exc))])
        return Response(serializers.PoolSerializer(self.get_queryset().get(pk=pool.pk)).data)

    @extend_schema(
        summary="Import a file into the pool (admins; all or nothing)",
        description=(
            "kind: queries (TSV or JSON lines), documents (JSON lines), qrels (TREC; `rater`, `grade_map`), "
            "judgments-csv (Quepid; `rater`), judgments-rre (RRE ratings JSON; `rater`), judgments-rater-csv, "
            "judgments-jsonl. `?dry_run=1` checks everything and reports the counts without storing anything. "
            "Judgment imports are an admin's override of the judging queue (POST judgments/ obeys it): they "
            "store the file's grades for any pair and rater, whether the pair is queued, complete, settled by a "
            "final grade or held by a rater; a grade the file holds for a rater replaces that rater's grade of the pair."
        ),
        parameters=[
            OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(IMPORT_KINDS)),
            OpenApiParameter("dry_run", bool, description="check only, store nothing"),
        ],
        request={"multipart/form-data": serializers.ImportFileSerializer},
        responses={
            201: serializers.ImportSummarySerializer,
            200: serializers.ImportSummarySerializer,
            400: PROBLEMS_400,
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"import/(?P<kind>[a-z-]+)",
        parser_classes=[MultiPartParser, FormParser],
        serializer_class=serializers.ImportFileSerializer,
    )
    def import_file(self, request: Request, name: str, kind: str):
        pool = self.get_object()
        if kind not in IMPORT_KINDS:
            raise Http404(f"No import named {kind}")
        if not access.is_admin(request.user):
            raise PermissionDenied("Only admins import files into a pool.")
        form = serializers.ImportFileSerializer(data=request.data)
        if not form.is_valid():
            return problems_response("Bad request.", field_problems(form.errors))
        upload = form.validated_data["file"]
        if (refused := too_large(upload)) is not None:
            return refused
        call = import_call(pool, kind, upload, upload.name, form.validated_data, request.user)
        check_only = truthy(query_param(request, "dry_run"))
        try:
            summary = dry_run(call) if check_only else call()
        except FormatError as exc:
            return format_error_response(exc)
        data = serializers.ImportSummarySerializer(summary).data
        return Response(data, status=status.HTTP_200_OK if check_only else status.HTTP_201_CREATED)


# --- Queries and documents ------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        parameters=[
            POOL_PARAM,
            OpenApiParameter("external_id", str),
            OpenApiParameter("search", str, description="in the text"),
            OpenApiParameter(
                "tag",
                str,
                many=True,
                description="only queries with this tag (repeat: with every one of them)",
            ),
        ]
    )
)
class QueryViewSet(
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Queries of the user's pools (raters see them as they grade). Admins create and edit them."""

    serializer_class = serializers.QuerySerializer
    permission_classes = [permissions.IsAuthenticated, IsAdminOrReadOnly]

    def get_queryset(self):
        rows = Query.objects.filter(pool__in=access.pools_for(self.request.user)).select_related("pool")
        if (pool := query_param(self.request, "pool")) is not None:
            rows = rows.filter(pool__name=pool)
        if (external_id := query_param(self.request, "external_id")) is not None:
            rows = rows.filter(external_id=external_id)
        if (search := query_param(self.request, "search")) is not None:
            rows = rows.filter(text__icontains=search)
        if tags := [t for t in self.request.query_params.getlist("tag") if t]:
            rows = rows.filter(tags__contains=tags)  # tags @> ARRAY[...]: the GIN index
        return rows.order_by("pool__name", "external_id")


@extend_schema_view(
    list=extend_schema(
        parameters=[
            POOL_PARAM,
            OpenApiParameter("external_id", str),
            OpenApiParameter(
                "has_content", bool, description="only documents with (true) or without (false) content"
            ),
        ]
    )
)
class DocumentViewSet(
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Documents of the user's pools. Admins create and edit them (or import JSON lines)."""

    serializer_class = serializers.DocumentSerializer
    permission_classes = [permissions.IsAuthenticated, IsAdminOrReadOnly]

    def get_queryset(self):
        rows = access.documents_for(self.request.user).select_related("pool")
        if (pool := query_param(self.request, "pool")) is not None:
            rows = rows.filter(pool__name=pool)
        if (external_id := query_param(self.request, "external_id")) is not None:
            rows = rows.filter(external_id=external_id)
        if (has_content := query_param(self.request, "has_content")) is not None:
            rows = rows.with_content() if truthy(has_content) else rows.without_content()
        return rows.order_by("pool__name", "external_id")

    def perform_update(self, serializer):
        serializer.save(introduced_by=None)  # an admin's content makes it pool material
