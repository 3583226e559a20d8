from django.contrib import admin

from .models import QueryScore


@admin.register(QueryScore)
class QueryScoreAdmin(admin.ModelAdmin):
    """Browsing only: scores are computed (scoring.services), and QueryScore is a view."""

    list_display = ("run", "query", "flavor", "ndcg_10", "judged_10", "has_ranking", "updated_at")
    list_filter = ("flavor", "run__configuration__pool", "run__configuration", "has_ranking")
    search_fields = ("query__external_id", "run__configuration__name")
    list_select_related = ("run__configuration", "query")
    raw_id_fields = ("run", "query")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
