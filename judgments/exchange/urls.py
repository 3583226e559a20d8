from django.urls import path

from . import views

app_name = "exchange"

urlpatterns = [
    path("pools/<str:pool_name>/import/", views.import_start, name="import"),
    path("pools/<str:pool_name>/import/<int:upload_id>/", views.import_preview, name="import-preview"),
    path("pools/<str:pool_name>/import/<int:upload_id>/cancel/", views.import_cancel, name="import-cancel"),
    path("pools/<str:pool_name>/export/", views.export_page, name="export"),
    path("pools/<str:pool_name>/export/<str:kind>/", views.export_download, name="export-download"),
    path("pools/<str:pool_name>/configurations/new/", views.configuration_new, name="configuration-new"),
    path("runs/<int:run_id>/download/", views.run_download, name="run-download"),
    path("account/api-token/", views.api_token, name="api-token"),
]
