from django.urls import path

from .views import (
    compare,
    coverage,
    downloads,
    evidence,
    history,
    leaderboard,
    live,
    measure_pages,
    recompute,
    trust,
    tuning,
)
from .webhooks import views as webhooks

app_name = "scoring"

urlpatterns: list = [
    # Leaderboard and comparisons (scoring/views/: leaderboard, compare; CSV files: downloads).
    path("pools/<str:pool_name>/leaderboard/", leaderboard.leaderboard, name="leaderboard"),
    path("pools/<str:pool_name>/measures/", measure_pages.settings_page, name="measures"),
    path("pools/<str:pool_name>/overlap/", measure_pages.overlap_page, name="overlap"),
    path("pools/<str:pool_name>/overlap/queue/", measure_pages.overlap_queue, name="overlap-queue"),
    path("pools/<str:pool_name>/leaderboard.csv", downloads.leaderboard_csv, name="leaderboard-csv"),
    path("pools/<str:pool_name>/compare/", compare.compare, name="compare"),
    path("pools/<str:pool_name>/queue/coverage/", coverage.queue_coverage, name="queue-coverage"),
    path("pools/<str:pool_name>/compare.csv", downloads.compare_csv, name="compare-csv"),
    path("pools/<str:pool_name>/compare/query/", compare.compare_query, name="compare-query"),
    path("pools/<str:pool_name>/export/scores.<str:fmt>", downloads.scores_download, name="scores-download"),
    path("runs/<int:run_id>/trec_eval/", downloads.run_scores_download, name="run-scores"),
    path("pools/<str:pool_name>/recompute/", recompute.recompute, name="recompute"),
    # Defending model grades: PPI estimates with the human sample, the leaderboard by each assessor.
    path("pools/<str:pool_name>/estimates/", evidence.estimates_page, name="estimates"),
    path("pools/<str:pool_name>/estimates/sample/", evidence.draw_sample_view, name="draw-sample"),
    path("pools/<str:pool_name>/assessors/", evidence.assessors_page, name="assessors"),
    path("pools/<str:pool_name>/webhooks/", webhooks.webhooks_page, name="webhooks"),
    # A model judge against the human raters (admins).
    path("pools/<str:pool_name>/judges/<str:name>/trust/", trust.trust_page, name="trust"),
    path(
        "pools/<str:pool_name>/judges/<str:name>/trust/adjudicate/",
        trust.send_to_adjudication,
        name="trust-adjudicate",
    ),
    path(
        "configurations/<int:configuration_id>/scores/",
        history.configuration_history,
        name="configuration-history",
    ),
    path(
        "configurations/<int:configuration_id>/scores.csv",
        downloads.configuration_history_csv,
        name="configuration-history-csv",
    ),
    path(
        "configurations/<int:configuration_id>/queue-unjudged/", compare.queue_unjudged, name="queue-unjudged"
    ),
    # Try a query live against the configuration's search endpoint (scoring.live).
    path("configurations/<int:configuration_id>/try/", live.live, name="live-query"),
    path("configurations/<int:configuration_id>/try/queue/", live.live_queue, name="live-queue"),
    path("configurations/<int:configuration_id>/try/tune/", tuning.tune, name="live-tune"),
]
