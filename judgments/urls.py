from django.urls import path

from . import views

app_name = "judgments"

urlpatterns = [
    path("pools/<str:pool>/", views.pool_detail, name="pool-detail"),
]
