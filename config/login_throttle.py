"""django-axes, fitted to the places that authenticate without a request.

The login page, the admin and /api/token/ pass their request to authenticate(), and axes counts failures
per account and per address. A management command, a script or a test calls authenticate() without one:
there is no address to count and nobody at a login form to lock out, so those calls are not throttled
(axes' own backend raises AxesBackendRequestParameterRequired, and its signal handlers log an error,
which config.log_filters.WithoutRequestFilter drops).
"""

from axes.backends import AxesStandaloneBackend


class LoginThrottleBackend(AxesStandaloneBackend):
    """axes' standalone backend (first in AUTHENTICATION_BACKENDS); a call without a request passes through
    to the next backend unthrottled."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None  # not a user: ModelBackend decides
        return super().authenticate(request, username, password, **kwargs)
