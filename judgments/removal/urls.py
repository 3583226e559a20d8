from django.urls import path

from . import views

app_name = "removal"

urlpatterns = [
    path("remove/<str:kind>/<int:pk>/", views.remove, name="remove"),
    path("remove/<str:kind>/<int:pk>/delete/", views.remove_delete, name="delete"),
    path("remove/<str:kind>/<int:pk>/archive/", views.remove_archive, name="archive"),
]
