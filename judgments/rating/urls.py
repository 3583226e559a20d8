"""Rating URLs: grading and "my judgments" for raters; queue, agreement and disagreements for admins."""

from django.urls import path

from . import gold_views, quality, queue_views, views

app_name = "rating"

urlpatterns = [
    path("pools/<str:pool_name>/grade/", views.grade_next, name="grade"),
    path("pools/<str:pool_name>/grade/skipped/", views.review_skipped, name="review-skipped"),
    path("pools/<str:pool_name>/grade/<int:pair_id>/", views.grade_pair, name="grade-pair"),
    path("pools/<str:pool_name>/my-judgments/", views.my_judgments, name="my-judgments"),
    path("pools/<str:pool_name>/queue/", queue_views.queue_page, name="queue"),
    path("pools/<str:pool_name>/queue/build/", queue_views.queue_build, name="queue-build"),
    path(
        "pools/<str:pool_name>/queue/configuration/",
        queue_views.queue_configuration,
        name="queue-configuration",
    ),
    path("pools/<str:pool_name>/queue/add/", queue_views.queue_add, name="queue-add"),
    path("pools/<str:pool_name>/queue/upload/", queue_views.queue_upload, name="queue-upload"),
    path("pools/<str:pool_name>/queue/missing-content/", queue_views.missing_content, name="missing-content"),
    path("pools/<str:pool_name>/agreement/", views.agreement, name="agreement"),
    path("pools/<str:pool_name>/gold/", gold_views.gold_pairs, name="gold"),
    path("pools/<str:pool_name>/rater-quality/", quality.rater_quality_fragment, name="rater-quality"),
    path("pools/<str:pool_name>/disagreements/", views.disagreements, name="disagreements"),
    path("pools/<str:pool_name>/disagreements/<int:pair_id>/final/", views.final_grade, name="final-grade"),
]
