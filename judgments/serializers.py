"""REST serializers: explicit fields, validation in one place, writes through the services.

Related objects are named the way files and scripts name them: pools by name, queries and documents
by their external ids, raters by username. Which rows a user may name is decided by the scoping
helpers of `access` (the serializer gets the request in its context).
"""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from . import access, limits
from .models import (
    EXTERNAL_ID_MAX,
    Document,
    Judgment,
    Pair,
    Pool,
    Query,
    Run,
    SearchConfiguration,
    Team,
)
from .query_fields import fields_problem
from .query_tags import normalise, tags_problem


class ProblemSerializer(serializers.Serializer):
    """One problem of a rejected input: 1-based line (0: the file as a whole; null for JSON bodies)."""

    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField()
    message = serializers.CharField()


class ProblemsSerializer(serializers.Serializer):
    """The 400 answer to bad input: nothing was stored."""

    detail = serializers.CharField()
    file = serializers.CharField(required=False)
    problems = ProblemSerializer(many=True)


class ImportSummarySerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    read = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    queries_created = serializers.IntegerField()
    documents_created = serializers.IntegerField()
    rater = serializers.CharField()
    summary = serializers.CharField(source="__str__")


def _user(context):
    return context["request"].user


class NameField(serializers.SlugRelatedField):
    """A related object by name. A name with a NUL is no name (PostgreSQL text cannot hold one: the
    lookup was a 500; schemathesis found it in a form body)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and "\x00" in data:
            self.fail("does_not_exist", slug_name=self.slug_field, value="(a name with a NUL character)")
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.STR)
class ScopedPoolField(NameField):
    """A pool by name, among those the user may use for this write (`scope` is an access helper)."""

    def __init__(self, scope=access.pools_for, **kwargs):
        self.scope = scope
        super().__init__(slug_field="name", **kwargs)

    def get_queryset(self):
        return self.scope(_user(self.context))


# --- Pools, queries, documents --------------------------------------------------------------------


class PoolSerializer(serializers.ModelSerializer):
    n_queries = serializers.IntegerField(read_only=True)
    n_documents = serializers.IntegerField(read_only=True)

    class Meta:
        model = Pool
        fields = (
            "name",
            "description",
            "guidelines",
            "grade_scale",
            "raters_per_pair",
            "combine_rule",
            "grade_source",
            "distractors_enabled",
            "queue_strategy",
            "queue_depth",
            "stop_when_settled",
            "gold_rate",
            "created_at",
            "n_queries",
            "n_documents",
        )
        read_only_fields = fields


class DistractorsSerializer(serializers.Serializer):
    distractors_enabled = serializers.BooleanField(
        help_text="Raters and model judges may grade -1, a distractor (looks relevant, misleads)."
    )


class QuerySerializer(serializers.ModelSerializer):
    pool = ScopedPoolField()

    class Meta:
        model = Query
        fields = ("id", "pool", "external_id", "text", "information_need", "fields", "tags")
        read_only_fields = ("id",)
        extra_kwargs = {
            "tags": {"help_text": "segments: head, tail, category:shoes (stored sorted, each once)"}
        }

    def validate_fields(self, value):
        problem = fields_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def to_internal_value(self, data):
        # The tag rule (judgments.query_tags) before the field's own checks, so that a bad tag gets its
        # one line naming it rather than a per-item error list.
        if hasattr(data, "get") and "tags" in data and (problem := tags_problem(data.get("tags"))):
            raise serializers.ValidationError({"tags": [problem]})
        return super().to_internal_value(data)

    def validate_tags(self, value):
        return normalise(value)


class DocumentSerializer(serializers.ModelSerializer):
    pool = ScopedPoolField()

    class Meta:
        model = Document
        fields = ("id", "pool", "external_id", "title", "body", "url", "extra")
        read_only_fields = ("id",)

    def validate_extra(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("extra must be a JSON object.")
        return value


# --- Configurations and runs ----------------------------------------------------------------------


class TeamField(NameField):
    """A team by name: admins name any team, engineers only their own."""

    def __init__(self, **kwargs):
        super().__init__(slug_field="name", **kwargs)

    def get_queryset(self):
        user = _user(self.context)
        return Team.objects.all() if access.is_admin(user) else Team.objects.filter(members=user)


class ConfigurationSerializer(serializers.ModelSerializer):
    pool = ScopedPoolField(scope=access.scored_pools_for)
    team = TeamField()
    current_run = serializers.IntegerField(source="newest_run", read_only=True, allow_null=True)
    n_runs = serializers.IntegerField(read_only=True)

    class Meta:
        model = SearchConfiguration
        fields = (
            "id",
            "pool",
            "team",
            "name",
            "description",
            "parameters",
            "model_name",
            "created_at",
            "current_run",
            "n_runs",
        )
        read_only_fields = ("id", "created_at")

    def validate_parameters(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("parameters must be a JSON object.")
        return value

    def validate(self, attrs):
        if self.instance is not None and "pool" in attrs and attrs["pool"] != self.instance.pool:
            raise serializers.ValidationError({"pool": "A configuration cannot move to another pool."})
        return attrs


class RunSerializer(serializers.ModelSerializer):
    pool = serializers.CharField(source="configuration.pool.name", read_only=True)
    configuration_name = serializers.CharField(source="configuration.name", read_only=True)
    submitted_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    n_rankings = serializers.IntegerField(read_only=True)

    class Meta:
        model = Run
        fields = (
            "id",
            "pool",
            "configuration",
            "configuration_name",
            "created_at",
            "submitted_by",
            "source",
            "tag",
            "filename",
            "endpoint",
            "n_rankings",
        )
        read_only_fields = fields


@extend_schema_field(OpenApiTypes.INT)
class ManagedConfigurationField(serializers.PrimaryKeyRelatedField):
    """A configuration the user sees; whether they may submit to it is checked by the view (403)."""

    def get_queryset(self):
        return access.configurations_for(_user(self.context)).select_related("pool", "team")


class RunSubmitSerializer(serializers.Serializer):
    """A whole run as JSON: ``{"configuration": 7, "rankings": {"q1": ["d3", "d1"], ...}}``."""

    configuration = ManagedConfigurationField()
    rankings = serializers.DictField(
        child=serializers.ListField(
            child=serializers.CharField(max_length=EXTERNAL_ID_MAX, trim_whitespace=False)
        ),
        allow_empty=False,
        help_text="{query id: [doc id, ...]} best first; a doc id may appear once per ranking.",
    )
    tag = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class RunUploadSerializer(serializers.Serializer):
    """A whole run as a TREC file ``qid Q0 docid rank score tag`` (multipart upload)."""

    configuration = ManagedConfigurationField()
    file = serializers.FileField()
    order = serializers.ChoiceField(choices=["score", "rank"], default="score")


class RankingsSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    rankings = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


# --- Judgments ------------------------------------------------------------------------------------


class JudgmentSerializer(serializers.ModelSerializer):
    """A judgment of the pair (pool, query_id, doc_id). Raters write their own: a grade 0-4, or
    cant_judge with a reason. Writing again changes the grade (the history keeps the old one)."""

    pool = serializers.SlugRelatedField(slug_field="name", source="pair.pool", read_only=True)
    query_id = serializers.CharField(source="pair.query.external_id", read_only=True)
    doc_id = serializers.CharField(source="pair.document.external_id", read_only=True)
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    reason = serializers.CharField(source="cant_judge_reason", read_only=True)

    class Meta:
        model = Judgment
        fields = (
            "id",
            "pool",
            "query_id",
            "doc_id",
            "rater",
            "grade",
            "cant_judge",
            "reason",
            "note",
            "created_at",
            "updated_at",
        )
        read_only_fields = fields


class JudgmentSubmitSerializer(serializers.Serializer):
    pool = ScopedPoolField(scope=access.rating_pools_for)
    query_id = serializers.CharField(max_length=EXTERNAL_ID_MAX)
    doc_id = serializers.CharField(max_length=EXTERNAL_ID_MAX)
    grade = serializers.IntegerField(
        min_value=-1,
        max_value=4,
        required=False,
        allow_null=True,
        help_text="0-4, or -1 (a distractor) in pools that enable the distractor grade.",
    )
    cant_judge = serializers.BooleanField(default=False)
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=limits.NOTE)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=limits.NOTE)

    def validate(self, attrs):
        pool = attrs["pool"]
        pair = (
            Pair.objects.in_pool(pool)
            .select_related("pool", "document")
            .filter(query__external_id=attrs["query_id"], document__external_id=attrs["doc_id"])
            .first()
        )
        if pair is None:
            raise serializers.ValidationError(
                {"doc_id": f"Query {attrs['query_id']} and this document are not a pair of pool {pool.name}."}
            )
        if not pair.document.has_content:
            raise serializers.ValidationError(
                {"doc_id": "This document has no content yet; it cannot be graded."}
            )
        if attrs["cant_judge"]:
            if attrs.get("grade") is not None:
                raise serializers.ValidationError({"grade": "Give a grade or cant_judge, not both."})
            if not attrs["reason"].strip():
                raise serializers.ValidationError({"reason": "Say why you can't judge this pair."})
        elif attrs.get("grade") is None:
            raise serializers.ValidationError(
                {"grade": "A grade 0-4 is required (or cant_judge with a reason)."}
            )
        elif problem := pool.grade_problem(attrs["grade"]):
            raise serializers.ValidationError({"grade": problem})
        attrs["pair"] = pair
        return attrs


# --- Imports and exports --------------------------------------------------------------------------


class ImportFileSerializer(serializers.Serializer):
    file = serializers.FileField()
    rater = serializers.CharField(
        required=False,
        help_text="qrels and judgments csv: username the grades belong to (created if missing)",
    )
    grade_map = serializers.CharField(required=False, help_text='qrels: e.g. "-2:0,-1:skip"')


def annotate_configurations(queryset):
    from django.db.models import Max

    return queryset.annotate(n_runs=Count("runs"), newest_run=Max("runs__id"))
