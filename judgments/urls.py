from django.urls import path

from . import views

app_name = "judgments"

urlpatterns = [
    path("pools/<str:pool_name>/", views.pool_detail, name="pool-detail"),
    path("pools/<str:pool_name>/configurations/", views.configuration_list, name="configuration-list"),
    path("configurations/<int:configuration_id>/", views.configuration_detail, name="configuration-detail"),
    path("runs/<int:run_id>/", views.run_detail, name="run-detail"),
]
