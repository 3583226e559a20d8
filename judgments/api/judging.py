"""REST: judgments (through the judging queue's rules) and API tokens."""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from django.contrib.auth.signals import user_logged_in
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.problems import Problem
from judgments.rating import grading

from .. import access, serializers, services
from ..login import locked_out
from ..models import Judgment
from .common import (
    POOL_PARAM,
    PROBLEMS_400,
    field_problems,
    problems_response,
    query_param,
)

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
        if (pool := query_param(self.request, "pool")) is not None:
            rows = rows.filter(pair__pool__name=pool)
        if (rater := query_param(self.request, "rater")) is not None:
            rows = rows.filter(rater__username=rater)
        if (query_id := query_param(self.request, "query_id")) is not None:
            rows = rows.filter(pair__query__external_id=query_id)
        if (doc_id := query_param(self.request, "doc_id")) is not None:
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
            return problems_response("Bad judgment.", field_problems(form.errors))
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
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        # A token is a login: axes records the address as known to the account and forgets this (account,
        # address)'s failures, as for the login page (judgments/login.py); Django sets last_login.
        user_logged_in.send(sender=type(user), request=request._request, user=user)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
