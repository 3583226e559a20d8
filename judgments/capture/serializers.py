"""REST serializers of endpoints and captures. Secrets are write-only: answers carry the definition as
pages show it (`SearchEndpoint.public`: credentials as ***) and the secret's state, never its value."""

from __future__ import annotations

from rest_framework import serializers

from judgments.endpoints.engines import AUTH_KINDS, KINDS
from judgments.models.capture import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MAX_DEPTH,
    CaptureJob,
    Schedule,
    SearchEndpoint,
)
from judgments.serializers import ManagedConfigurationField


class EndpointSerializer(serializers.ModelSerializer):
    """One endpoint version. Write: POST a whole definition; empty fields take the kind's defaults."""

    configuration = ManagedConfigurationField()
    kind = serializers.ChoiceField(choices=KINDS)
    method = serializers.ChoiceField(choices=["", "GET", "POST"], required=False, default="")
    template = serializers.CharField(required=False, default="", allow_blank=True, trim_whitespace=False)
    hits_path = serializers.CharField(required=False, default="", allow_blank=True)
    id_field = serializers.CharField(required=False, default="", allow_blank=True)
    score_field = serializers.CharField(required=False, default="", allow_blank=True)
    headers = serializers.ListField(
        child=serializers.ListField(
            child=serializers.CharField(allow_blank=True), min_length=2, max_length=2
        ),
        required=False,
        default=list,
        help_text='[["Name", "value"], ...]; a value of "***" keeps the stored value of that header',
    )
    auth_kind = serializers.ChoiceField(choices=["", *AUTH_KINDS], required=False, default="")
    auth_user = serializers.CharField(required=False, default="", allow_blank=True)
    auth_secret_env = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="preferred: the name of the environment variable holding the secret",
    )
    secret = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        style={"input_type": "password"},
        help_text='write-only: a secret to store; omit (or null) to keep the stored one, "" to remove it',
    )
    secret_state = serializers.CharField(read_only=True, help_text='"set", "not set" or "from $NAME"')
    auth_header = serializers.CharField(required=False, default="", allow_blank=True)
    depth = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_DEPTH, allow_null=True, default=None
    )
    schedule = serializers.ChoiceField(
        choices=Schedule.values, required=False, write_only=True, help_text="capture_due's schedule"
    )
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = SearchEndpoint
        fields = (
            "id",
            "configuration",
            "version",
            "kind",
            "url",
            "method",
            "template",
            "hits_path",
            "id_field",
            "score_field",
            "headers",
            "auth_kind",
            "auth_user",
            "auth_secret_env",
            "auth_header",
            "secret",
            "secret_state",
            "depth",
            "schedule",
            "created_at",
            "created_by",
        )
        read_only_fields = ("id", "version", "created_at", "created_by", "secret_state")

    def to_representation(self, instance: SearchEndpoint) -> dict:
        data = super().to_representation(instance)
        shown = instance.public()  # secrets redacted
        for name in ("url", "template", "headers", "method", "hits_path", "id_field", "score_field"):
            data[name] = shown[name]
        data["secret_state"] = shown["secret"]
        return data


class CaptureSerializer(serializers.ModelSerializer):
    endpoint_version = serializers.IntegerField(source="endpoint.version", read_only=True)
    # null once the account is deleted (SET_NULL): the schema says so (schemathesis found it).
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    stale = serializers.BooleanField(read_only=True, help_text="running, but its process stopped")

    class Meta:
        model = CaptureJob
        fields = (
            "id",
            "configuration",
            "endpoint",
            "endpoint_version",
            "status",
            "stale",
            "trigger",
            "requested_by",
            "depth",
            "concurrency",
            "keep_partial",
            "total",
            "done",
            "failed",
            "rate",
            "failures",
            "notes",
            "message",
            "run",
            "cancel_requested",
            "created_at",
            "started_at",
            "finished_at",
        )
        read_only_fields = fields


class CaptureStartSerializer(serializers.Serializer):
    """``{"configuration": 7, "depth": 100, "concurrency": 8, "keep_partial": false}``."""

    configuration = ManagedConfigurationField()
    depth = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_DEPTH, allow_null=True, default=None
    )
    concurrency = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_CONCURRENCY, default=DEFAULT_CONCURRENCY
    )
    keep_partial = serializers.BooleanField(required=False, default=False)
