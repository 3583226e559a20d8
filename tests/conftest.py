"""Personas and a small pool shared by every test. Tests run on PostgreSQL (embedded or DATABASE_URL).

Personas: `site_admin` (admin role, superuser), `engineer` (team member), `other_engineer` (another team),
`rater`, `other_rater`, `outsider` (logged in, no pool, no role).
"""

import os
import shutil

import pytest

# Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls there otherwise.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

PASSWORD = "correct-horse-battery"


@pytest.fixture(scope="session", autouse=True)
def _fast_test_settings():
    """For the whole session: MD5 for the personas' passwords (test data) instead of PBKDF2's 0.2-0.3 s a hash."""
    from django.test import override_settings

    fast = override_settings(
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        # WhiteNoise scans every static file (~520) when a handler is built, and every test client
        # builds one: 0.1 s a test. Autorefresh finds a file when it is asked for instead.
        WHITENOISE_AUTOREFRESH=True,
    )
    fast.enable()
    yield
    fast.disable()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, checked to be PostgreSQL (never SQLite). Pure tests need no database."""
    from django.db import connection

    with django_db_blocker.unblock():
        assert connection.vendor == "postgresql", "tests run on PostgreSQL only"
    yield


def _user(django_user_model, username, role=None, **extra):
    from django.contrib.auth.models import Group

    from judgments.access import ensure_role_groups

    user = django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)
    if role:
        # The role groups come with the migrations (post_migrate, also after a transactional test's flush);
        # making them again for every persona cost ~9 ms a persona, a third of a short test.
        group = Group.objects.filter(name=role).first()
        if group is None:
            ensure_role_groups()
            group = Group.objects.get(name=role)
        user.groups.add(group)
    return user


@pytest.fixture
def site_admin(db, django_user_model):
    return _user(django_user_model, "ada_admin", "admin", is_staff=True, is_superuser=True)


@pytest.fixture
def engineer(db, django_user_model):
    return _user(django_user_model, "erin_engineer", "engineer")


@pytest.fixture
def other_engineer(db, django_user_model):
    return _user(django_user_model, "oscar_engineer", "engineer")


@pytest.fixture
def rater(db, django_user_model):
    return _user(django_user_model, "rita_rater", "rater")


@pytest.fixture
def other_rater(db, django_user_model):
    return _user(django_user_model, "ray_rater", "rater")


@pytest.fixture
def outsider(db, django_user_model):
    return _user(django_user_model, "olly_outsider")


@pytest.fixture
def team(db, engineer):
    from judgments.models import Team

    team = Team.objects.create(name="relevance")
    team.members.add(engineer)
    return team


@pytest.fixture
def other_team(db, other_engineer):
    from judgments.models import Team

    team = Team.objects.create(name="other-team")
    team.members.add(other_engineer)
    return team


@pytest.fixture
def pool(db, engineer, other_engineer, rater, other_rater):
    """2 queries x 3 documents with content; engineers and raters are members."""
    from judgments.models import Document, Pool, Query

    pool = Pool.objects.create(name="robust", description="test pool", guidelines="Grade **carefully**.")
    pool.members.add(engineer, other_engineer, rater, other_rater)
    for q in ("q1", "q2"):
        Query.objects.create(pool=pool, external_id=q, text=f"query {q}", information_need=f"need of {q}")
    for d in ("d1", "d2", "d3"):
        Document.objects.create(pool=pool, external_id=d, title=f"Title {d}", body=f"Body of {d} about query")
    return pool


@pytest.fixture
def configuration(db, pool, team):
    from judgments.models import SearchConfiguration

    return SearchConfiguration.objects.create(pool=pool, team=team, name="bm25", parameters={"k1": 1.2})


@pytest.fixture
def other_configuration(db, pool, other_team):
    from judgments.models import SearchConfiguration

    return SearchConfiguration.objects.create(pool=pool, team=other_team, name="dense")


@pytest.fixture
def run(db, configuration, engineer):
    from judgments import services

    return services.record_run(
        configuration, {"q1": ["d1", "d2", "d3"], "q2": ["d3", "d1"]}, source="api", submitted_by=engineer
    )


@pytest.fixture
def child_env(transactional_db):
    """Environment for a child process (manage.py, gunicorn, db_worker) that uses this test's database:
    DATABASE_URL names it, the embedded server's socket included. Its data must be committed, hence
    transactional_db."""
    from django.db import connection

    from tests.database import database_url

    connection.ensure_connection()
    url = database_url(connection.settings_dict)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST_"))}
    env.update(DEBUG="1", DATABASE_URL=url)
    return env


def server_tmp_dir(prefix: str):
    """A temporary directory for an embedded PostgreSQL data dir, outside pytest's own temporary root: as
    root the server runs as its own system user, which must traverse every parent, and any pytest session
    starting on the machine resets that root to 0700. Remove it with shutil.rmtree when done."""
    import tempfile

    path = tempfile.mkdtemp(prefix=f"jl-test-{prefix}-", dir="/tmp")
    os.chmod(path, 0o755)
    from pathlib import Path

    return Path(path)


@pytest.fixture
def server_tmp():
    path = server_tmp_dir("pg")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def login(client, user):
    client.force_login(user)
    return client


# --- Browser tests -----------------------------------------------------------------------------------

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def chromium():
    """Debian's chromium driven by Playwright (no downloaded browser). Skipped where chromium is
    missing, except in CI, where a missing browser is a failure."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_login(live_server, chromium):
    """Returns login(user, viewport=(w, h)) -> a Playwright page logged in through the real login form."""
    contexts = []

    def _login(user, viewport=(1366, 768)):
        context = chromium.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        # The form redirects on success: wait for that page, not for 500 ms of network silence.
        with page.expect_navigation():
            page.click("button[type=submit]")
        assert "/accounts/login/" not in page.url, f"{user.username} could not log in"
        return page

    yield _login
    for context in contexts:
        context.close()
