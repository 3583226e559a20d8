"""Logging in, for the pages and the API alike: the login page, the lockout answer and the throttle.

Throttling is django-axes, fitted to the places that authenticate without a request. The login page, the
admin and /api/token/ pass their request to authenticate(), and axes counts failures per account and per
address. A management command, a script or a test calls authenticate() without one:
there is no address to count and nobody at a login form to lock out, so those calls are not throttled
(axes' own backend raises AxesBackendRequestParameterRequired, and its signal handlers log an error,
which config.log_filters.WithoutRequestFilter drops).
"""

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

from .models import Pool


class LoginThrottleBackend(AxesStandaloneBackend):
    """axes' standalone backend (first in AUTHENTICATION_BACKENDS); a call without a request passes through
    to the next backend unthrottled."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None  # not a user: ModelBackend decides
        return super().authenticate(request, username, password, **kwargs)


class LoginView(auth_views.LoginView):
    """Django's login, plus the demo logins when the demo is loaded (DEBUG only)."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["demo_logins"] = settings.DEBUG and Pool.objects.filter(name="demo").exists()
        return context


def locked_out(request, original_response=None, credentials=None) -> HttpResponse:
    """django-axes' answer to a login refused for too many failures (settings.AXES_LOCKOUT_CALLABLE):
    the login page saying why and for how long, or JSON for the API; 429 with Retry-After either way."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    message = (
        f"Too many failed logins for this account or from your address: logins are refused for "
        f"{seconds // 60} minutes, even with the right password. Try again later, or ask an admin to unlock "
        "the account."
    )
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=429)
    else:
        username = (credentials or {}).get("username") or request.POST.get("username", "")
        form = AuthenticationForm(request, initial={"username": username})
        context = {"form": form, "locked_out": message, "next": request.POST.get("next", "")}
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
