from django.urls import path

from . import views

app_name = "capture"

urlpatterns = [
    path("configurations/<int:configuration_id>/endpoint/", views.endpoint_edit, name="endpoint-edit"),
    path(
        "configurations/<int:configuration_id>/endpoint/history/",
        views.endpoint_history,
        name="endpoint-history",
    ),
    path(
        "configurations/<int:configuration_id>/endpoint/restore/",
        views.endpoint_restore,
        name="endpoint-restore",
    ),
    path("configurations/<int:configuration_id>/capture/", views.capture_start, name="capture-start"),
    path("captures/<int:job_id>/", views.capture_job, name="capture-job"),
    path("captures/<int:job_id>/cancel/", views.capture_cancel, name="capture-cancel"),
]
