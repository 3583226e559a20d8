"""The judges' pages (admins): a pool's judges and grade source, each judge's settings and runs."""

from django.urls import path

from . import views

app_name = "judges"

urlpatterns = [
    path("pools/<str:pool_name>/judges/", views.judge_list, name="list"),
    path("pools/<str:pool_name>/judges/grade-source/", views.grade_source, name="grade-source"),
    path("pools/<str:pool_name>/judges/new/", views.judge_new, name="new"),
    path("pools/<str:pool_name>/judges/<str:name>/", views.judge_detail, name="detail"),
    path("pools/<str:pool_name>/judges/<str:name>/edit/", views.judge_edit, name="edit"),
    path("pools/<str:pool_name>/judges/<str:name>/runs/", views.run_start, name="run-start"),
    path("pools/<str:pool_name>/judges/<str:name>/runs/<int:run_id>/", views.run_status, name="run-status"),
    path(
        "pools/<str:pool_name>/judges/<str:name>/runs/<int:run_id>/cancel/",
        views.run_cancel,
        name="run-cancel",
    ),
]
