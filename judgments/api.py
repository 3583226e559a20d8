"""The REST API (Django REST Framework): pools, queries, documents, configurations, runs, judgments,
imports and exports. Scores live in scoring/api.py; the router is config/api_urls.py.

Permissions follow the roles of `access`, and every ViewSet scopes its rows in `get_queryset`:
- raters read the pools they belong to, their queries and documents, and submit and read their own
  judgments; they read no configuration, run or score (403);
- engineers read configurations and runs of their pools, create configurations for their teams and
  submit runs only to their own team's configurations (403 otherwise);
- admins read everything, including every rater's judgments, import files and export qrels.
A row outside the user's scope is a 404, never data. Bad input is a 400 with
``{"detail", "file"?, "problems": [{"line", "field", "message"}, ...]}`` and nothing stored.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.exchange import exports
from judgments.exchange.formats import FormatError, Problem
from judgments.exchange.imports import import_run
from judgments.exchange.imports.calls import import_call
from judgments.exchange.imports.checks import dry_run
from judgments.rating import grading

from . import access, serializers, services
from .models import Document, Judgment, Query, Ranking, Run
from .views import locked_out

PROBLEMS_400 = OpenApiResponse(serializers.ProblemsSerializer, description="Bad input; nothing was stored.")
STREAM_200 = OpenApiResponse(OpenApiTypes.STR, description="A streamed text file (attachment).")
IMPORT_KINDS = (
    "queries",
    "documents",
    "qrels",
    "judgments-csv",
    "judgments-rre",
    "judgments-rater-csv",
    "judgments-jsonl",
)


# --- Permissions and shared answers ---------------------------------------------------------------


class IsEngineer(permissions.BasePermission):
    """Engineers and admins (raters and users without a role get 403)."""

    message = "Only engineers and admins may see configurations, runs and scores."

    def has_permission(self, request, view) -> bool:
        return access.is_engineer(request.user)


class IsAdminOrReadOnly(permissions.BasePermission):
    message = "Only admins may change this."

    def has_permission(self, request, view) -> bool:
        return request.method in permissions.SAFE_METHODS or access.is_admin(request.user)


def problems_response(
    detail: str, problems: list[Problem], *, file: str | None = None, status_code: int = 400
) -> Response:
    body: dict = {"detail": detail}
    if file is not None:
        body["file"] = file
    body["problems"] = [{"line": p.line, "field": p.field, "message": p.message} for p in problems]
    return Response(body, status=status_code)


def format_error_response(exc: FormatError) -> Response:
    return problems_response(
        f"{exc.name}: {len(exc.problems)} problem(s); nothing was stored.", exc.problems, file=exc.name
    )


def too_large(upload) -> Response | None:
    if upload.size > settings.UPLOAD_MAX_BYTES:
        limit = settings.UPLOAD_MAX_BYTES // (1024 * 1024)
        problem = Problem(
            0, "file", f"the file is {upload.size:,} bytes; the limit is {limit} MB (UPLOAD_MAX_MB)"
        )
        return problems_response("The file is too large; nothing was stored.", [problem], file=upload.name)
    return None


def stream(chunks, filename: str, content_type: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value if value not in (None, "") else None


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


POOL_PARAM = OpenApiParameter("pool", str, description="pool name")


# --- Pools, with imports and exports --------------------------------------------------------------


def _count(model, **outer):
    rows = model.objects.filter(**{k: OuterRef(v) for k, v in outer.items()}).order_by().values(*outer)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n")[:1], output_field=IntegerField()), 0)


class PoolViewSet(viewsets.ReadOnlyModelViewSet):
    """Pools the user belongs to (admins: all), by name."""

    serializer_class = serializers.PoolSerializer
    lookup_field = "name"
    lookup_value_regex = r"[^/]+"

    def get_queryset(self):
        return access.pools_for(self.request.user).annotate(
            n_queries=_count(Query, pool="pk"), n_documents=_count(Document, pool="pk")
        )

    @extend_schema(
        summary="Download an export of the pool (streamed)",
        description=(
            "kind: "
            + ", ".join(f"`{k}` ({e.title}; {e.audience}s)" for k, e in exports.POOL_EXPORTS.items())
            + ". Combined-grade exports follow the pool's combine rule (see the file name). Raters get 403."
        ),
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(exports.POOL_EXPORTS))],
        responses={
            200: STREAM_200,
            400: PROBLEMS_400,
            403: OpenApiResponse(description="Not for your role."),
        },
    )
    @action(detail=True, methods=["get"], url_path=r"export/(?P<kind>[a-z-]+)")
    def export(self, request: Request, name: str, kind: str):
        pool = self.get_object()
        export = exports.POOL_EXPORTS.get(kind)
        if export is None:
            raise Http404(f"No export named {kind}")
        if not exports.may_export(request.user, export):
            raise PermissionDenied("This export is not available to your role.")
        try:
            return stream(export.make(pool), export.filename(pool), export.content_type)
        except (exports.ExportError, ValueError) as exc:
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
            return problems_response("Bad request.", _field_problems(form.errors))
        upload = form.validated_data["file"]
        if (refused := too_large(upload)) is not None:
            return refused
        call = import_call(pool, kind, upload, upload.name, form.validated_data, request.user)
        check_only = _truthy(_param(request, "dry_run"))
        try:
            summary = dry_run(call) if check_only else call()
        except FormatError as exc:
            return format_error_response(exc)
        data = serializers.ImportSummarySerializer(summary).data
        return Response(data, status=status.HTTP_200_OK if check_only else status.HTTP_201_CREATED)


def _field_problems(errors) -> list[Problem]:
    problems = []
    for field, messages in errors.items():
        for message in messages if isinstance(messages, list) else [messages]:
            problems.append(Problem(0, field, str(message)))
    return problems


# --- Queries and documents ------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        parameters=[
            POOL_PARAM,
            OpenApiParameter("external_id", str),
            OpenApiParameter("search", str, description="in the text"),
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
        if (pool := _param(self.request, "pool")) is not None:
            rows = rows.filter(pool__name=pool)
        if (external_id := _param(self.request, "external_id")) is not None:
            rows = rows.filter(external_id=external_id)
        if (search := _param(self.request, "search")) is not None:
            rows = rows.filter(text__icontains=search)
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
        rows = Document.objects.filter(pool__in=access.pools_for(self.request.user)).select_related("pool")
        if (pool := _param(self.request, "pool")) is not None:
            rows = rows.filter(pool__name=pool)
        if (external_id := _param(self.request, "external_id")) is not None:
            rows = rows.filter(external_id=external_id)
        if (has_content := _param(self.request, "has_content")) is not None:
            rows = rows.with_content() if _truthy(has_content) else rows.without_content()
        return rows.order_by("pool__name", "external_id")


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
        if (pool := _param(self.request, "pool")) is not None:
            rows = rows.filter(pool__name=pool)
        if (team := _param(self.request, "team")) is not None:
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
            .annotate(n_rankings=_count(Ranking, run="pk"))
        )
        if (pool := _param(self.request, "pool")) is not None:
            rows = rows.filter(configuration__pool__name=pool)
        if (configuration := _param(self.request, "configuration")) is not None:
            rows = rows.filter(configuration_id=configuration) if configuration.isdigit() else rows.none()
        if _truthy(_param(self.request, "current")):
            rows = rows.current()
        return rows.order_by("-id")

    def _managed_run(self) -> Run:
        run = self.get_object()
        if not exports.may_export_run(self.request.user, run):
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
            return problems_response("Bad run.", _field_problems(form.errors))
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
            return problems_response("Bad run upload.", _field_problems(form.errors))
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

    @extend_schema(summary="The run as a TREC file (streamed)", responses={200: STREAM_200})
    @action(detail=True, methods=["get"], serializer_class=None)
    def trec(self, request: Request, pk=None):
        run = self._managed_run()
        try:
            return stream(exports.run_chunks(run), exports.run_filename(run), "text/plain; charset=utf-8")
        except exports.ExportError as exc:
            return problems_response(str(exc), [Problem(0, "run", str(exc))])


# --- Judgments ------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        parameters=[
            POOL_PARAM,
            OpenApiParameter("rater", str, description="username (admins; others only see their own)"),
            OpenApiParameter("query_id", str),
            OpenApiParameter("doc_id", str),
        ]
    )
)
class JudgmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Raters submit and read their own judgments; admins read everyone's."""

    serializer_class = serializers.JudgmentSerializer

    def get_queryset(self):
        user = self.request.user
        rows = Judgment.objects.select_related("pair__pool", "pair__query", "pair__document", "rater")
        if not user.is_authenticated:
            return rows.none()
        rows = rows if access.is_admin(user) else rows.filter(rater=user)
        if (pool := _param(self.request, "pool")) is not None:
            rows = rows.filter(pair__pool__name=pool)
        if (rater := _param(self.request, "rater")) is not None:
            rows = rows.filter(rater__username=rater)
        if (query_id := _param(self.request, "query_id")) is not None:
            rows = rows.filter(pair__query__external_id=query_id)
        if (doc_id := _param(self.request, "doc_id")) is not None:
            rows = rows.filter(pair__document__external_id=doc_id)
        return rows.order_by("-updated_at", "-id")

    @extend_schema(
        summary="Grade a pair (or change your grade): a grade 0-4, or cant_judge with a reason",
        description=(
            "Goes through the judging queue's rules, the same as the grading page: a new grade needs the "
            "pair queued, its document with content, no admin's final grade, fewer grades than the pool's "
            "raters_per_pair, and no other rater holding it right now. Changing one's own judgment is always "
            "allowed, except turning a can't-judge into a grade on a pair that has its grades. A refusal is "
            "a 409 and stores nothing. An admin's import (POST pools/{name}/import/...) is not bound by the "
            "queue: it writes the file's grades for any pair and rater, queued or not, complete or not."
        ),
        request=serializers.JudgmentSubmitSerializer,
        responses={
            201: serializers.JudgmentSerializer,
            200: serializers.JudgmentSerializer,
            400: PROBLEMS_400,
            409: OpenApiResponse(
                serializers.ProblemsSerializer,
                description="The queue refuses this grade; nothing was stored.",
            ),
        },
    )
    def create(self, request: Request, *args, **kwargs):
        user = request.user
        if not (access.is_rater(user) or access.is_admin(user)):
            raise PermissionDenied("Only raters submit judgments.")
        pool_name = request.data.get("pool") if hasattr(request.data, "get") else None
        if isinstance(pool_name, str) and pool_name:
            access.get_pool_or_404(user, access.rating_pools_for, name=pool_name)
        form = serializers.JudgmentSubmitSerializer(data=request.data, context=self.get_serializer_context())
        if not form.is_valid():
            return problems_response("Bad judgment.", _field_problems(form.errors))
        data = form.validated_data
        try:
            judgment = grading.save_grade(
                data["pair"],
                user,
                grade=data.get("grade"),
                cant_judge=data["cant_judge"],
                reason=data["reason"],
                note=data["note"],
            )
        except (grading.QueueError, services.JudgmentError) as error:
            return problems_response(
                str(error), [Problem(0, "doc_id", str(error))], status_code=status.HTTP_409_CONFLICT
            )
        created = judgment.created
        judgment = self.get_queryset().get(pk=judgment.pk)
        return Response(
            serializers.JudgmentSerializer(judgment).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


# --- Tokens ------------------------------------------------------------------------------------------


class TokenView(ObtainAuthToken):
    """POST username and password, get your API token. Throttled like the login page (django-axes):
    after too many failures for the account or from the address, 429 with Retry-After, even with the
    right password."""

    def post(self, request: Request, *args, **kwargs):
        username = request.data.get("username") if hasattr(request.data, "get") else None
        if not AxesProxyHandler.is_allowed(request, {"username": username}):
            return locked_out(request)
        return super().post(request, *args, **kwargs)
