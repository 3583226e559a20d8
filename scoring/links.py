"""Links the app sends out (gate reports, webhook bodies): a path of the app with settings.SITE_URL, the
app's public address, in front when it is set."""

from django.conf import settings


def absolute(path: str) -> str:
    return f"{settings.SITE_URL}{path}"
