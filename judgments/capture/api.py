"""REST API of live capture (registered in config/api_urls.py): set a configuration's endpoint (a new
version), start a capture, poll it, cancel it. Scoped like judgments/api/: engineers see the endpoints
and captures of their pools' configurations and change only their own team's; admins everything."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from judgments import access
from judgments.api import PROBLEMS_400, IsEngineer, field_problems, problems_response, query_param, truthy
from judgments.endpoints.engines import EndpointError
from judgments.models.capture import CaptureJob, SearchEndpoint
from judgments.problems import Problem

from . import serializers, services, tasks

CONFIGURATION_PARAM = OpenApiParameter("configuration", int, description="configuration id")
NOT_YOURS_403 = OpenApiResponse(description="Not your team's configuration.")


def _check_manage(user, configuration) -> None:
    if not access.can_manage_configuration(user, configuration):
        raise PermissionDenied(
            f"Only team {configuration.team.name} (and admins) may change or capture {configuration.name}."
        )


@extend_schema_view(
    list=extend_schema(
        summary="Endpoint versions (newest first); ?current=1 for each configuration's current one",
        parameters=[CONFIGURATION_PARAM, OpenApiParameter("current", bool)],
    ),
    retrieve=extend_schema(summary="One endpoint version, secrets redacted"),
)
class EndpointViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Search endpoints of configurations, one row per version. Every POST makes a new version (or none
    when nothing changed); old versions are kept, and runs link to the version they were captured with."""

    serializer_class = serializers.EndpointSerializer
    permission_classes = [permissions.IsAuthenticated, IsEngineer]

    def get_queryset(self):
        rows = SearchEndpoint.objects.filter(
            configuration__in=access.configurations_for(self.request.user)
        ).select_related("configuration", "created_by")
        if (configuration := query_param(self.request, "configuration")) is not None:
            rows = rows.filter(configuration_id=configuration) if configuration.isdigit() else rows.none()
        if truthy(query_param(self.request, "current")):
            rows = rows.filter(
                pk__in=[c.endpoint.pk for c in access.configurations_for(self.request.user) if c.endpoint]
            )
        return rows.order_by("configuration_id", "-version")

    @extend_schema(
        summary="Set a configuration's endpoint (a new version)",
        description="Empty fields take the kind's defaults (elasticsearch/opensearch: multi_match over title "
        "and body, size={{depth}}; solr: q={{query}}&rows={{depth}}&fl=id,score). 201: a new version; 200: "
        "the definition equals the current one, nothing stored. Secrets: prefer `auth_secret_env`; `secret` "
        "is stored write-only.",
        request=serializers.EndpointSerializer,
        responses={
            201: serializers.EndpointSerializer,
            200: serializers.EndpointSerializer,
            400: PROBLEMS_400,
            403: NOT_YOURS_403,
        },
    )
    def create(self, request: Request, *args, **kwargs):
        form = serializers.EndpointSerializer(data=request.data, context=self.get_serializer_context())
        if not form.is_valid():
            return problems_response("Bad endpoint; nothing was stored.", field_problems(form.errors))
        data = dict(form.validated_data)
        configuration = data.pop("configuration")
        _check_manage(request.user, configuration)
        schedule = data.pop("schedule", None)
        try:
            endpoint, changed = services.set_endpoint(
                configuration, auth_secret=data.pop("secret"), user=request.user, **data
            )
        except EndpointError as exc:
            return problems_response(
                f"Bad endpoint; nothing was stored: {exc}", [Problem(None, "endpoint", str(exc))]
            )
        if schedule is not None:
            services.set_schedule(configuration, schedule)
        return Response(
            serializers.EndpointSerializer(endpoint, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED if changed else status.HTTP_200_OK,
        )


@extend_schema_view(
    list=extend_schema(summary="Captures, newest first", parameters=[CONFIGURATION_PARAM]),
    retrieve=extend_schema(summary="A capture's progress and outcome (poll this)"),
)
class CaptureViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Captures of runs from configurations' endpoints: start one (it runs in the background worker),
    poll its progress (done/total, failures with the engine's error, queries per second), cancel it."""

    serializer_class = serializers.CaptureSerializer
    permission_classes = [permissions.IsAuthenticated, IsEngineer]

    def get_queryset(self):
        rows = CaptureJob.objects.filter(
            configuration__in=access.configurations_for(self.request.user)
        ).select_related("endpoint", "requested_by")
        if (configuration := query_param(self.request, "configuration")) is not None:
            rows = rows.filter(configuration_id=configuration) if configuration.isdigit() else rows.none()
        return rows.order_by("-id")

    @extend_schema(
        summary="Start a capture of a configuration's current endpoint (202; poll the capture)",
        description="Every query of the pool is sent; the top `depth` ids become a new run, scored at once. "
        "All or nothing: with a failed query nothing is stored, unless `keep_partial`.",
        request=serializers.CaptureStartSerializer,
        responses={202: serializers.CaptureSerializer, 400: PROBLEMS_400, 403: NOT_YOURS_403},
    )
    def create(self, request: Request, *args, **kwargs):
        form = serializers.CaptureStartSerializer(data=request.data, context=self.get_serializer_context())
        if not form.is_valid():
            return problems_response("Bad capture request.", field_problems(form.errors))
        data = dict(form.validated_data)
        configuration = data.pop("configuration")
        _check_manage(request.user, configuration)
        try:
            job = tasks.enqueue_capture(
                configuration, trigger=CaptureJob.Trigger.API, user=request.user, **data
            )
        except services.CaptureError as exc:
            return problems_response(str(exc), [Problem(None, "configuration", str(exc))])
        return Response(self.get_serializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Cancel a queued or running capture (nothing is stored)",
        request=None,
        responses={200: serializers.CaptureSerializer, 403: NOT_YOURS_403},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk=None):
        job = self.get_object()
        _check_manage(request.user, job.configuration)
        services.request_cancel(job)
        job.refresh_from_db()
        return Response(self.get_serializer(job).data)
