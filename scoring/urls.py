from django.urls import path

from . import views, views_csv, views_recompute

app_name = "scoring"

urlpatterns: list = [
    # Leaderboard and comparisons (scoring.views; CSV downloads: scoring.views_csv).
    path("pools/<str:pool>/leaderboard/", views.leaderboard, name="leaderboard"),
    path("pools/<str:pool>/leaderboard.csv", views_csv.leaderboard_csv, name="leaderboard-csv"),
    path("pools/<str:pool>/compare/", views.compare, name="compare"),
    path("pools/<str:pool>/compare.csv", views_csv.compare_csv, name="compare-csv"),
    path("pools/<str:pool>/compare/query/", views.compare_query, name="compare-query"),
    path("pools/<str:pool>/recompute/", views_recompute.recompute, name="recompute"),
    path(
        "configurations/<int:configuration_id>/scores/",
        views.configuration_history,
        name="configuration-history",
    ),
    path(
        "configurations/<int:configuration_id>/scores.csv",
        views_csv.configuration_history_csv,
        name="configuration-history-csv",
    ),
    path(
        "configurations/<int:configuration_id>/queue-unjudged/", views.queue_unjudged, name="queue-unjudged"
    ),
]
