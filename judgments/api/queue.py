"""REST: the judging queue of a pool. Raters take their next pair (`GET pools/{name}/next/`, then
`POST judgments/`); admins set how the queue is ordered (`PUT pools/{name}/queue/`)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers as fields
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from judgments import gold
from judgments.exchange.formats import Problem
from judgments.rating import grading, queue

from .. import access, serializers
from ..models import Pair
from .common import PROBLEMS_400, problems_response


class NextPairSerializer(fields.Serializer):
    """What a rater needs to grade a pair, and nothing about how it was chosen (no rank, no priority)."""

    pool = fields.CharField(source="pool.name")
    query_id = fields.CharField(source="query.external_id")
    query = fields.CharField(source="query.text")
    information_need = fields.CharField(source="query.information_need")
    doc_id = fields.CharField(source="document.external_id")
    title = fields.CharField(source="document.title")
    body = fields.CharField(source="document.body")
    url = fields.CharField(source="document.url")
    held_until = fields.DateTimeField()


class QueueSettingsSerializer(fields.Serializer):
    strategy = fields.CharField(required=False, help_text="depth or adaptive")
    depth = fields.IntegerField(required=False, help_text=f"k, 1-{queue.MAX_DEPTH}")
    stop_when_settled = fields.BooleanField(required=False)
    rebuild = fields.BooleanField(
        default=True, help_text="rebuild the queue from the current runs now (grades are kept)"
    )


class QueueActions:
    """Mixed into PoolViewSet."""

    @extend_schema(
        summary="Take the next pair to grade (raters): held for you, as the grading page does",
        description=(
            "Returns the pair the grading page would serve and holds it for you for a few minutes; grade it "
            "with POST judgments/ (pool, query_id, doc_id, grade). 204 when nothing is left for you, or the "
            "pool is complete for now (set to stop when its leaderboard has settled)."
        ),
        responses={200: NextPairSerializer, 204: OpenApiResponse(description="Nothing left for you.")},
    )
    @action(detail=True, methods=["get"], url_path="next", serializer_class=NextPairSerializer)
    def next(self, request: Request, name: str):
        user = request.user
        if not (access.is_rater(user) or access.is_admin(user)):
            raise PermissionDenied("Only raters take pairs from the queue.")
        pool = access.get_pool_or_404(user, access.rating_pools_for, name=name)
        pair = grading.next_pair_for(user, pool)
        if pair is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        response = Response(NextPairSerializer(pair).data)
        response["Cache-Control"] = "no-store"
        return response

    @extend_schema(
        summary="Set the queue's strategy, depth and stop-when-settled, and rebuild it (admins)",
        request=QueueSettingsSerializer,
        responses={200: serializers.PoolSerializer, 400: PROBLEMS_400},
    )
    @action(detail=True, methods=["put"], url_path="queue", serializer_class=QueueSettingsSerializer)
    def queue(self, request: Request, name: str):
        pool = self.get_object()
        if not access.is_admin(request.user):
            raise PermissionDenied("Only admins change a pool's settings.")
        form = QueueSettingsSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            strategy = queue.check_strategy(data.get("strategy", pool.queue_strategy))
            depth = data.get("depth", pool.queue_depth)
            if not 1 <= depth <= queue.MAX_DEPTH:
                raise queue.QueueError(f"depth must be an integer from 1 to {queue.MAX_DEPTH}, not {depth}.")
        except queue.QueueError as exc:
            field = "strategy" if "strategy" in str(exc) else "depth"
            return problems_response(str(exc), [Problem(None, field, str(exc))])
        with transaction.atomic():
            pool.stop_when_settled = data.get("stop_when_settled", pool.stop_when_settled)
            pool.queue_strategy, pool.queue_depth = strategy, depth
            pool.save(update_fields=["stop_when_settled", "queue_strategy", "queue_depth"])
            if data["rebuild"]:
                queue.build_queue(pool, depth, strategy)
        return Response(serializers.PoolSerializer(self.get_queryset().get(pk=pool.pk)).data)


class GoldPairSerializer(fields.Serializer):
    query_id = fields.CharField()
    doc_id = fields.CharField()
    grade = fields.IntegerField()


class GoldSerializer(fields.Serializer):
    pairs = GoldPairSerializer(many=True)


class GoldActions:
    """Mixed into PoolViewSet: gold pairs, admins only (a rater cannot tell a gold pair from another)."""

    @extend_schema(
        summary="List (GET) or mark (POST) the pool's gold pairs, with their known grades (admins)",
        description=(
            "POST {pairs: [{query_id, doc_id, grade}]}: all or nothing; a pair the pool does not have or a grade "
            "outside its scale is a 400 naming the line, and nothing changes. A gold grade is also the pair's "
            "final grade, so raters' answers on it stay out of the combined grade."
        ),
        request=GoldSerializer,
        responses={200: GoldSerializer, 400: PROBLEMS_400},
    )
    @action(detail=True, methods=["get", "post"], url_path="gold", serializer_class=GoldSerializer)
    def gold(self, request: Request, name: str):
        pool = self.get_object()
        if not access.is_admin(request.user):
            raise PermissionDenied("Only admins see and mark gold pairs.")
        if request.method == "POST":
            form = GoldSerializer(data=request.data)
            if not form.is_valid():
                return problems_response("Bad gold pairs.", [Problem(None, "pairs", str(form.errors))])
            items = [(p["query_id"], p["doc_id"], p["grade"]) for p in form.validated_data["pairs"]]
            try:
                gold.mark_gold(pool, items, request.user)
            except gold.GoldError as exc:
                return problems_response(str(exc), [Problem(None, "pairs", p) for p in exc.problems])
        rows = (
            Pair.objects.in_pool(pool)
            .filter(gold_grade__isnull=False)
            .order_by("query__external_id", "document__external_id")
            .values_list("query__external_id", "document__external_id", "gold_grade")
        )
        return Response({"pairs": [{"query_id": q, "doc_id": d, "grade": g} for q, d, g in rows]})
