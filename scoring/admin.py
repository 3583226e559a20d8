from django.contrib import admin

from .models import QueryScore


@admin.register(QueryScore)
class QueryScoreAdmin(admin.ModelAdmin):
    list_display = ("run", "query", "flavor", "ndcg_10", "judged_10", "has_ranking", "updated_at")
    list_filter = ("flavor", "run__configuration__pool", "run__configuration", "has_ranking")
    search_fields = ("query__external_id", "run__configuration__name")
    list_select_related = ("run__configuration", "query")
    raw_id_fields = ("run", "query")
