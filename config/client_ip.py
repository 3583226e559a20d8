"""The client's address, for login throttling (django-axes): REMOTE_ADDR, or behind `TRUSTED_PROXIES`
proxies the address the outermost trusted proxy saw, read from the right of X-Forwarded-For. Entries
further left are whatever the client sent, so they are never trusted."""

from django.conf import settings


def client_ip(request) -> str | None:
    remote = request.META.get("REMOTE_ADDR") or None  # None, as axes's own default, without an address
    proxies = getattr(settings, "TRUSTED_PROXIES", 0)
    if proxies <= 0:
        return remote
    chain = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    # Each trusted proxy appended the address it was talking to: the last `proxies` entries are theirs.
    return chain[-proxies] if len(chain) >= proxies else remote
