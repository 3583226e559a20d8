import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from config import gc_freeze  # noqa: E402 (needs the settings above)

gc_freeze.install()  # the long-lived objects out of the collector's way: no 100 ms pauses mid-request
