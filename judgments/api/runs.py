"""REST: search configurations and their runs."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.exchange.exports.catalog import may_export_run
from judgments.exchange.exports.runs import run_chunks, run_filename
from judgments.exchange.exports.stream import ExportError
from judgments.exchange.imports import import_run
from judgments.problems import FormatError, Problem

from .. import access, serializers, services
from ..models import Ranking, Run
from .common import (
    POOL_PARAM,
    PROBLEMS_400,
    IsEngineer,
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

# --- Configurations and runs ----------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(parameters=[POOL_PARAM, OpenApiParameter("team", str, description="team name")])
)
class ConfigurationViewSet(viewsets.ModelViewSet):
    """Search configurations of the user's pools. Engineers create them for their own teams and change
    or delete only those; admins any."""

    serializer_class = serializers.ConfigurationSerializer
    permission_classes = [permissions.IsAuthenticated, IsEngineer]

    def get_queryset(self):
        rows = serializers.annotate_configurations(
            access.configurations_for(self.request.user).select_related("pool", "team")
        )
        if (pool := query_param(self.request, "pool")) is not None:
            rows = rows.filter(pool__name=pool)
        if (team := query_param(self.request, "team")) is not None:
            rows = rows.filter(team__name=team)
        return rows.order_by("pool__name", "name")

    def _check_manage(self, configuration) -> None:
        if not access.can_manage_configuration(self.request.user, configuration):
            raise PermissionDenied("Only the configuration's team (and admins) may change it.")

    def perform_update(self, serializer):
        self._check_manage(serializer.instance)
        serializer.save()

    def perform_destroy(self, instance):
        self._check_manage(instance)
        instance.delete()


@extend_schema_view(
    list=extend_schema(
        parameters=[
            POOL_PARAM,
            OpenApiParameter("configuration", int, description="configuration id"),
            OpenApiParameter("current", bool, description="only each configuration's newest run"),
        ]
    )
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Runs of the user's pools (engineers, admins). Submitting a run is for the configuration's team and
    admins; reading its rankings and downloading it as a TREC file too, and for every engineer of the pool
    when the pool shares rankings (access.may_see_rankings)."""

    serializer_class = serializers.RunSerializer
    permission_classes = [permissions.IsAuthenticated, IsEngineer]

    def get_queryset(self):
        rows = (
            access.runs_for(self.request.user)
            .select_related("configuration__pool", "configuration__team", "submitted_by")
            .annotate(n_rankings=count_of(Ranking, run="pk"))
        )
        if (pool := query_param(self.request, "pool")) is not None:
            rows = rows.filter(configuration__pool__name=pool)
        if (configuration := query_param(self.request, "configuration")) is not None:
            rows = rows.filter(configuration_id=configuration) if configuration.isdigit() else rows.none()
        if truthy(query_param(self.request, "current")):
            rows = rows.current()
        return rows.order_by("-id")

    def _managed_run(self) -> Run:
        run = self.get_object()
        if not may_export_run(self.request.user, run):
            raise PermissionDenied(
                "Only the configuration's team (and admins) may read this run's rankings, unless the pool "
                "shares rankings."
            )
        return run

    def _submit_allowed(self, configuration) -> None:
        if not access.can_manage_configuration(self.request.user, configuration):
            raise PermissionDenied(
                f"You may not submit runs for {configuration.name}: it belongs to team {configuration.team.name}."
            )

    @extend_schema(
        summary="Submit a whole run as JSON",
        request=serializers.RunSubmitSerializer,
        responses={
            201: serializers.RunSerializer,
            400: PROBLEMS_400,
            403: OpenApiResponse(description="Not your team's configuration."),
        },
    )
    def create(self, request: Request, *args, **kwargs):
        form = serializers.RunSubmitSerializer(data=request.data, context=self.get_serializer_context())
        if not form.is_valid():
            return problems_response("Bad run.", field_problems(form.errors))
        configuration = form.validated_data["configuration"]
        self._submit_allowed(configuration)
        try:
            run = services.record_run(
                configuration,
                form.validated_data["rankings"],
                source=Run.Source.API,
                submitted_by=request.user,
                tag=form.validated_data["tag"],
            )
        except services.RunError as exc:
            problems = [
                Problem(None, f"rankings.{qid}" if qid else "rankings", message)
                for qid, message in exc.problems
            ]
            return problems_response(str(exc), problems or [Problem(None, "rankings", str(exc))])
        return Response(
            self.get_serializer(self.get_queryset().get(pk=run.pk)).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        summary="Submit a whole run as a TREC file (qid Q0 docid rank score tag)",
        request={"multipart/form-data": serializers.RunUploadSerializer},
        responses={
            201: serializers.RunSerializer,
            400: PROBLEMS_400,
            403: OpenApiResponse(description="Not your team's configuration."),
        },
    )
    @action(
        detail=False,
        methods=["post"],
        parser_classes=[MultiPartParser, FormParser],
        serializer_class=serializers.RunUploadSerializer,
    )
    def upload(self, request: Request):
        form = serializers.RunUploadSerializer(data=request.data, context=self.get_serializer_context())
        if not form.is_valid():
            return problems_response("Bad run upload.", field_problems(form.errors))
        configuration = form.validated_data["configuration"]
        self._submit_allowed(configuration)
        upload = form.validated_data["file"]
        if (refused := too_large(upload)) is not None:
            return refused
        try:
            run = import_run(
                configuration,
                upload,
                name=upload.name,
                order=form.validated_data["order"],
                submitted_by=request.user,
                source=Run.Source.API,
            )
        except FormatError as exc:
            return format_error_response(exc)
        return Response(
            serializers.RunSerializer(self.get_queryset().get(pk=run.pk)).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        summary="The run's rankings {query id: [doc id, ...]}",
        responses={200: serializers.RankingsSerializer},
    )
    @action(detail=True, methods=["get"], serializer_class=serializers.RankingsSerializer)
    def rankings(self, request: Request, pk=None):
        run = self._managed_run()
        return Response({"run": run.pk, "rankings": services.ranking_external_ids(run)})

    @extend_schema(summary="The run as a TREC file (streamed)", responses=streamed("text/plain"))
    @action(detail=True, methods=["get"], serializer_class=None)
    def trec(self, request: Request, pk=None):
        run = self._managed_run()
        try:
            return stream(run_chunks(run), run_filename(run), "text/plain; charset=utf-8")
        except ExportError as exc:
            return problems_response(str(exc), [Problem(0, "run", str(exc))])
