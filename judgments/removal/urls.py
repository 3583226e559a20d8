from django.urls import path

from . import views

app_name = "removal"

# One page per object: GET says what would go, POST (action=delete|archive|restore) does it.
urlpatterns = [
    path("pools/<str:pool_name>/remove/", views.remove_pool, name="pool"),
    path("pools/<str:pool_name>/judges/<str:name>/remove/", views.remove_judge, name="judge"),
    path("configurations/<int:configuration_id>/remove/", views.remove_configuration, name="configuration"),
    path("runs/<int:run_id>/remove/", views.remove_run, name="run"),
]
