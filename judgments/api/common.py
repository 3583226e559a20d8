"""The REST API's shared pieces: permissions, answers for bad input, upload limits, streamed files, query
parameters."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.problems import FormatError, Problem

from .. import access, serializers

PROBLEMS_400 = OpenApiResponse(serializers.ProblemsSerializer, description="Bad input; nothing was stored.")
STREAM_200 = OpenApiResponse(OpenApiTypes.STR, description="A streamed text file (attachment).")
# The media types exports stream, for `responses={**streamed(...)}`: the schema names the real ones.
EXPORT_TYPES = ("text/plain", "text/csv", "application/x-ndjson", "application/json")


def streamed(*media_types: str) -> dict:
    """`responses` entries for a 200 streamed as each of `media_types`."""
    return {(200, media_type): STREAM_200 for media_type in media_types}


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


def exception_handler(exc, context):
    """DRF's answers, but a 400 that says only `detail` (a body that is not JSON, a bad media type...)
    gets the `problems` list every documented 400 of this API has (ProblemsSerializer)."""
    from rest_framework.views import exception_handler as drf_handler

    response = drf_handler(exc, context)
    if response is not None and response.status_code == 400 and isinstance(response.data, dict):
        if set(response.data) == {"detail"}:
            detail = str(response.data["detail"])
            response.data = {"detail": detail, "problems": [{"line": 0, "field": "body", "message": detail}]}
    return response


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


def query_param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value if value not in (None, "") else None


def truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


POOL_PARAM = OpenApiParameter("pool", str, description="pool name")


def field_problems(errors) -> list[Problem]:
    problems = []
    for field, messages in errors.items():
        for message in messages if isinstance(messages, list) else [messages]:
            problems.append(Problem(0, field, str(message)))
    return problems


def count_of(model, **outer):
    rows = model.objects.filter(**{k: OuterRef(v) for k, v in outer.items()}).order_by().values(*outer)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n")[:1], output_field=IntegerField()), 0)
