"""`POST /api/pools/<name>/gate/`: the gate through the API (engineers of the pool and admins).

200 with the JSON summary of `manage.py gate` (verdict "pass" or "fail") and its two reports as text
(`markdown`, `junit`), 400 with one problem naming the
field for what the command refuses with exit 2, 404 for a pool the user may not see."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judgments import access
from judgments.api import IsEngineer, problems_response
from judgments.exchange.formats import Problem

from ..flavours import DEFAULT_FLAVOUR
from . import reports, service


class GateSerializer(serializers.Serializer):
    baseline = serializers.CharField(max_length=200, help_text="configuration name")
    candidate = serializers.CharField(max_length=200, help_text="configuration name")
    measures = serializers.ListField(
        child=serializers.CharField(max_length=50),
        required=False,
        default=list,
        help_text="as export_scores names them (ndcg@10, P@5, mrr, ...); default [ndcg@10]",
    )
    flavor = serializers.CharField(required=False, default=DEFAULT_FLAVOUR)
    alpha = serializers.FloatField(required=False, default=service.DEFAULT_ALPHA)
    max_drop = serializers.FloatField(required=False, default=0.0)
    test = serializers.ChoiceField(choices=service.TESTS, required=False, default="t")


class GateResultSerializer(serializers.Serializer):
    """Documents the answer (reports.summary)."""

    verdict = serializers.ChoiceField(choices=["pass", "fail"])
    pool = serializers.CharField()
    measures = serializers.ListField(child=serializers.DictField())
    link = serializers.CharField()
    markdown = serializers.CharField(help_text="the Markdown summary (manage.py gate --markdown)")
    junit = serializers.CharField(help_text="the JUnit XML report (manage.py gate --junit)")


# A GateError's text names what is wrong; the field it belongs to, for the problem list.
def _field(message: str) -> str:
    for marker, name in (
        ("--alpha", "alpha"),
        ("--max-drop", "max_drop"),
        ("--test", "test"),
        ("flavour", "flavor"),
        ("measure", "measures"),
        ("baseline configuration", "baseline"),
        ("candidate configuration", "candidate"),
        ("same configuration", "candidate"),
    ):
        if marker in message:
            return name
    return "configuration"


class GateView(APIView):
    permission_classes = [permissions.IsAuthenticated, IsEngineer]
    serializer_class = GateSerializer

    @extend_schema(
        summary="Gate a candidate configuration's current run against a baseline's (manage.py gate)",
        request=GateSerializer,
        responses={
            200: GateResultSerializer,
            400: OpenApiResponse(description="Bad input: one problem naming the field."),
        },
    )
    def post(self, request: Request, name: str) -> Response:
        pool = access.get_pool_or_404(request.user, access.scored_pools_for, name=name)
        given = GateSerializer(data=request.data)
        if not given.is_valid():
            problems = [
                Problem(0, field, str(message))
                for field, messages in given.errors.items()
                for message in (messages if isinstance(messages, list) else [messages])
            ]
            return problems_response("Bad gate request.", problems)
        data = given.validated_data
        try:
            result = service.evaluate(
                pool,
                data["baseline"],
                data["candidate"],
                measures=data["measures"],
                flavour=data["flavor"],
                alpha=data["alpha"],
                max_drop=data["max_drop"],
                test=data["test"],
            )
        except service.GateError as exc:
            return problems_response(str(exc), [Problem(0, _field(str(exc)), str(exc))])
        link = service.compare_link(result)
        service.notify(result, link)
        # The reports the command writes to files, for a CI job that has only the app's URL and a token.
        return Response(
            {
                **reports.summary(result, link),
                "markdown": reports.markdown(result, link),
                "junit": reports.junit_xml(result),
            }
        )
