"""The REST API under /api/: a DefaultRouter of the ViewSets, the OpenAPI schema and its docs page.

The API authenticates by token (scripts) or session (the browser) itself, so every view here opts
out of LoginRequiredMiddleware; DRF's permissions (IsAuthenticated by default) then apply.
"""

from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from judgments import api
from judgments.capture import api as capture_api
from scoring import api as scoring_api

app_name = "api"

router = DefaultRouter()
router.register("pools", api.PoolViewSet, basename="pool")
router.register("queries", api.QueryViewSet, basename="query")
router.register("documents", api.DocumentViewSet, basename="document")
router.register("configurations", api.ConfigurationViewSet, basename="configuration")
router.register("runs", api.RunViewSet, basename="run")
router.register("judgments", api.JudgmentViewSet, basename="judgment")
router.register("endpoints", capture_api.EndpointViewSet, basename="endpoint")
router.register("captures", capture_api.CaptureViewSet, basename="capture")
router.register("scores", scoring_api.ScoreViewSet, basename="score")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("token/", obtain_auth_token, name="token"),
    path("", include(router.urls)),
]


def _open(patterns):
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            _open(pattern.url_patterns)
        else:
            login_not_required(pattern.callback)


_open(urlpatterns)
