"""Logging in, for the pages and the API alike: the login page, the lockout answer and the throttle.

Throttling is django-axes, counting so that neither an account holder can bypass it nor an attacker can
turn it against an account's owner. Failed logins (the login page, the admin, /api/token/) are counted,
over the cool-off (`AXES_COOLOFF_TIME`), three ways:
- per (account, address): `AXES_FAILURE_LIMIT` failures refuse that account from that address;
- per account, from every address: the same limit refuses the account from addresses it has never logged
  in from (axes' AccessLog), while an address it has logged in from before still gets through with the
  right password, so an attacker guessing from elsewhere cannot lock the owner out;
- per address, over every account: `LOGIN_ADDRESS_FAILURE_LIMIT` failures (several times the account
  limit: an office behind one address has typos too) refuse that address for accounts that never logged
  in from it, which stops one address trying a password on every account without locking out the people
  who work behind it.
A successful login forgets only its own (account, address) failures (`AXES_LOCKOUT_PARAMETERS`), so
logging in as oneself never wipes the failures recorded against another account. Failures while refused
count too: an address that keeps guessing stays refused.

A management command, a script or a test calls authenticate() without a request: there is no address to
count and nobody at a login form to lock out, so those calls are not throttled (axes' own backend raises
AxesBackendRequestParameterRequired, and its signal handlers log an error, which
config.log_filters.WithoutRequestFilter drops).
"""

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt, AccessLog
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Q, Sum
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


def failure_counts(username: str | None, address: str | None, since) -> tuple[int, int, int]:
    """Failed logins since `since`: (of this account from this address, of this account from anywhere,
    from this address for any account)."""
    totals = AccessAttempt.objects.filter(
        Q(username=username) | Q(ip_address=address), attempt_time__gte=since
    ).aggregate(
        pair=Sum("failures_since_start", filter=Q(username=username, ip_address=address), default=0),
        account=Sum("failures_since_start", filter=Q(username=username), default=0),
        address=Sum("failures_since_start", filter=Q(ip_address=address), default=0),
    )
    return totals["pair"], totals["account"], totals["address"]


def known_address(username: str | None, address: str | None) -> bool:
    """Whether the account has logged in from this address before (axes' AccessLog of successful logins)."""
    if not username or not address:
        return False
    return AccessLog.objects.filter(username=username, ip_address=address).exists()


class LoginThrottleHandler(AxesDatabaseHandler):
    """axes' database handler (settings.AXES_HANDLER), counting as the module docstring says. axes refuses
    a login when get_failures reaches the failure limit; here that number is the (account, address)
    failures, raised to the limit when the account or address rule refuses an unknown address."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        username = get_client_username(request, credentials)
        address = request.axes_ip_address
        limit = get_failure_limit(request, credentials)
        pair, account, from_address = failure_counts(username, address, get_cool_off_threshold(request))
        if pair >= limit:
            return pair
        if (account >= limit or from_address >= settings.LOGIN_ADDRESS_FAILURE_LIMIT) and not known_address(
            username, address
        ):
            return limit
        return pair


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
        f"Too many failed logins for this account: logins from your address are refused for {seconds // 60} "
        "minutes, even with the right password. An address the account has logged in from before is not "
        "refused for failures elsewhere. Try again later, or ask an admin to unlock the account."
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
