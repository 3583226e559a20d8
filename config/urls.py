from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from judgments import login
from judgments import views as judgment_views

urlpatterns = [
    path("", judgment_views.home, name="home"),
    path("healthz", judgment_views.healthz, name="healthz"),
    path("accounts/login/", login.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("judgments.urls")),
    path("", include("judgments.rating.urls")),
    path("", include("judgments.campaign.urls")),
    path("", include("judgments.capture.urls")),
    path("", include("judgments.judges.urls")),
    path("", include("judgments.removal.urls")),
    path("", include("scoring.urls")),
    path("api/", include("config.api_urls")),
    path("", include("judgments.exchange.urls")),
]
