"""Content-Security-Policy for every response (Django 5.2 has none built in).

Pages load scripts and styles from this site only: no inline <script>, no event-handler attributes, no
eval, no <style> elements; inline `style="..."` attributes (progress bars) are allowed. Images may be data:
URIs (Swagger UI's icons). A view that needs another policy sets the header itself (`csp_override`);
the middleware leaves such a header alone.
"""

from collections.abc import Callable
from functools import wraps

from django.conf import settings

HEADER = "Content-Security-Policy"

DEFAULT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

# drf-spectacular's Swagger UI page has one inline <style> element; its init script is a separate file.
SWAGGER_POLICY = DEFAULT_POLICY.replace("style-src 'self';", "style-src 'self' 'unsafe-inline';")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable):
        self.get_response = get_response
        self.policy = getattr(settings, "CONTENT_SECURITY_POLICY", DEFAULT_POLICY)

    def __call__(self, request):
        response = self.get_response(request)
        if self.policy and HEADER not in response:
            response[HEADER] = self.policy
        return response


def csp_override(policy: str):
    """Decorate a view so its responses carry `policy` instead of the site's."""

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            response[HEADER] = policy
            return response

        return wrapped

    return decorate
