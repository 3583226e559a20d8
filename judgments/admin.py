from django.contrib import admin

from .models import (
    AdjudicationRequest,
    Document,
    JudgeRun,
    Judgment,
    JudgmentChange,
    ModelJudge,
    Pair,
    Pool,
    Query,
    Ranking,
    Run,
    SearchConfiguration,
    Team,
    Upload,
)


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("name", "raters_per_pair", "combine_rule", "grade_source", "share_rankings", "created_at")
    search_fields = ("name", "description")
    filter_horizontal = ("members",)


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ("external_id", "text", "pool")
    list_filter = ("pool",)
    search_fields = ("external_id", "text", "information_need")
    list_select_related = ("pool",)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("external_id", "title", "pool")
    list_filter = ("pool",)
    search_fields = ("external_id", "title", "url")
    list_select_related = ("pool",)

    def get_deleted_objects(self, objs, request):
        """A document a stored run ranks is protected, as a foreign key with PROTECT would be: the admin
        names the runs and deletes nothing (exports of those runs would fail without it)."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        runs = Run.objects.ranking_any_of(list(objs)).select_related("configuration")
        protected = [
            *protected,
            *(f"Run {run.pk} of {run.configuration.name}, which ranks it" for run in runs),
        ]
        return deleted, counts, perms_needed, protected


@admin.register(Pair)
class PairAdmin(admin.ModelAdmin):
    list_display = ("__str__", "pool", "queued_at", "priority", "held_by", "final_grade")
    list_filter = (
        "pool",
        ("queued_at", admin.EmptyFieldListFilter),
        ("final_grade", admin.EmptyFieldListFilter),
    )
    search_fields = ("query__external_id", "document__external_id", "query__text")
    raw_id_fields = ("query", "document", "held_by", "final_by")
    list_select_related = ("pool", "query", "document", "held_by")


class JudgmentChangeInline(admin.TabularInline):
    model = JudgmentChange
    fk_name = "pair"
    extra = 0
    can_delete = False
    fields = (
        "changed_at",
        "action",
        "rater",
        "changed_by",
        "old_grade",
        "new_grade",
        "old_cant_judge",
        "new_cant_judge",
    )
    readonly_fields = fields


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("pair", "rater", "grade", "cant_judge", "updated_at")
    list_filter = ("pair__pool", "rater", "grade", "cant_judge")
    search_fields = ("pair__query__external_id", "pair__document__external_id", "rater__username", "note")
    raw_id_fields = ("pair",)
    list_select_related = ("pair__query", "pair__document", "rater")
    date_hierarchy = "updated_at"


@admin.register(JudgmentChange)
class JudgmentChangeAdmin(admin.ModelAdmin):
    list_display = ("changed_at", "action", "pair", "rater", "changed_by", "old_grade", "new_grade")
    list_filter = ("action", "pair__pool", "rater")
    search_fields = ("pair__query__external_id", "pair__document__external_id", "rater__username")
    list_select_related = ("pair__query", "pair__document", "rater", "changed_by")

    # The history is written by a database trigger and is never edited by hand.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name",)
    search_fields = ("name",)
    filter_horizontal = ("members",)


@admin.register(SearchConfiguration)
class SearchConfigurationAdmin(admin.ModelAdmin):
    list_display = ("name", "pool", "team", "created_at")
    list_filter = ("pool", "team")
    search_fields = ("name", "description")


class RankingInline(admin.TabularInline):
    model = Ranking
    extra = 0
    raw_id_fields = ("query",)
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("query")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "configuration", "source", "tag", "submitted_by", "created_at")
    list_filter = ("configuration__pool", "configuration", "source")
    search_fields = ("configuration__name", "tag", "filename")
    list_select_related = ("configuration",)


@admin.register(Ranking)
class RankingAdmin(admin.ModelAdmin):
    list_display = ("__str__", "run", "query")
    list_filter = ("run__configuration__pool", "run__configuration")
    search_fields = ("query__external_id",)
    raw_id_fields = ("run", "query")


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ("filename", "kind", "pool", "uploaded_by", "created_at")
    list_filter = ("kind", "pool")


@admin.register(ModelJudge)
class ModelJudgeAdmin(admin.ModelAdmin):
    """Judges are created on the pool's Model judges page or by `manage.py judge` (with their account);
    deleting one would turn its judgments into a person's, so neither is offered here."""

    list_display = ("__str__", "pool", "base_url", "api_key_env", "concurrency", "updated_at")
    list_filter = ("pool",)
    readonly_fields = ("user", "pool", "created_at", "updated_at")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ("__str__", "judge", "status", "done", "total", "calls", "tokens", "created_at")
    list_filter = ("status", "judge__pool")
    list_select_related = ("judge__user",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AdjudicationRequest)
class AdjudicationRequestAdmin(admin.ModelAdmin):
    list_display = ("pair", "reason", "requested_by", "requested_at")
    raw_id_fields = ("pair",)
