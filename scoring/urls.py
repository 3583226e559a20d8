from django.urls import path

app_name = "scoring"

urlpatterns: list = []
