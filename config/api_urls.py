"""The REST API under /api/: a DefaultRouter of the ViewSets, the OpenAPI schema and its docs page.

The API authenticates by token (scripts) or session (the browser) itself, so every view here opts
out of LoginRequiredMiddleware; DRF's permissions (IsAuthenticated by default, the schema's too) then
apply. The docs page is the exception: an anonymous browser is sent to the login page.
"""

from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from config.csp import SWAGGER_POLICY, csp_override
from judgments import api
from judgments.capture import api as capture_api
from scoring import api as scoring_api
from scoring import measure_api, segment_api
from scoring.gate import api as gate_api

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
router.register("measure-sets", measure_api.MeasureSetViewSet, basename="measure-set")
router.register("segments", segment_api.SegmentViewSet, basename="segment")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("token/", api.TokenView.as_view(), name="token"),
    path("pools/<str:name>/gate/", gate_api.GateView.as_view(), name="pool-gate"),
    path("", include(router.urls)),
]


def _open(patterns):
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            _open(pattern.url_patterns)
        else:
            login_not_required(pattern.callback)


_open(urlpatterns)

# Swagger UI's init script is served as a file (?script), so the page needs no inline script.
urlpatterns.append(
    path(
        "docs/",
        # DRF marks its views login_not_required: login_required redirects an anonymous browser itself.
        login_required(
            csp_override(SWAGGER_POLICY)(SpectacularSwaggerSplitView.as_view(url_name="api:schema"))
        ),
        name="docs",
    )
)
