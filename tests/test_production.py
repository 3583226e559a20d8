"""The production recipe of docs/operations.md, for real: DEBUG off, collectstatic, gunicorn on 127.0.0.1, then the
login page, /healthz, a grading page and an export answer 200 (no mock server, no test client)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.management.base import CommandError

from tests.bench import server as gunicorn

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct-horse-battery"  # as in tests/conftest.py


def _base_env(base: dict | None = None, **extra: str) -> dict:
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if not k.startswith(("DJANGO_", "PYTEST_", "SECURE_"))
    }
    env.update(DEBUG="0", SECRET_KEY="production-test-" + "k" * 40, ALLOWED_HOSTS="127.0.0.1", **extra)
    return env


def _real_password(user) -> None:
    """The test session hashes with MD5, which production settings do not accept: use PBKDF2."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    hasher = PBKDF2PasswordHasher()
    user.password = hasher.encode(PASSWORD, hasher.salt(), iterations=1000)
    user.save(update_fields=["password"])


@pytest.fixture
def served(child_env, tmp_path, pool, rater, site_admin):
    """gunicorn serving the test database with production settings; yields its base URL."""
    from judgments.rating import queue

    pool.members.add(site_admin)
    queue.add_pairs(pool, [("q1", "d1"), ("q2", "d2")])
    for user in (rater, site_admin):
        _real_password(user)
    env = _base_env(
        child_env,
        STATIC_ROOT=str(tmp_path / "static"),
        SECURE_COOKIES="0",  # plain HTTP on 127.0.0.1; behind TLS the cookies are Secure
    )
    log = open(tmp_path / "gunicorn.log", "w+")
    try:
        # collectstatic, then gunicorn on a free port, as the load benchmarks start it.
        server, base = gunicorn.start_gunicorn(env, log, workers=2)
    except CommandError as exc:
        log.seek(0)
        pytest.fail(f"{exc}:\n{log.read()[-3000:]}")
    assert (tmp_path / "static" / "staticfiles.json").exists()
    try:
        yield base
    finally:
        gunicorn.stop(server)
        log.close()


def _login(base: str, username: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30)
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    answer = client.post(
        "/accounts/login/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/accounts/login/"},
    )
    assert answer.status_code == 302, answer.text[:500]
    return client


@pytest.mark.slow
def test_the_production_recipe_serves_pages_static_files_and_exports(served, rater, site_admin, pool):
    login_page = httpx.get(f"{served}/accounts/login/")
    assert login_page.status_code == 200
    assert "script-src 'self'" in login_page.headers["Content-Security-Policy"]
    # The manifest's hashed names are used, and whitenoise serves them from STATIC_ROOT.
    css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', login_page.text)
    assert css, "the page must link the hashed stylesheet from collectstatic's manifest"
    assert httpx.get(served + css.group(1)).status_code == 200
    assert httpx.get(f"{served}/healthz").json() == {"status": "ok"}

    as_rater = _login(served, rater.username)
    grading = as_rater.get(f"/pools/{pool.name}/grade/")
    assert grading.status_code == 200
    assert 'id="grade-form"' in grading.text

    as_admin = _login(served, site_admin.username)
    export = as_admin.get(f"/pools/{pool.name}/export/queries-tsv/")
    assert export.status_code == 200
    assert export.text.splitlines()[0].split("\t")[0] in {"q1", "q2"}
    docs = as_admin.get("/api/docs/")
    assert docs.status_code == 200
    for asset in re.findall(r'(?:href|src)="(/static/vendor/swagger-ui/[^"]+)"', docs.text):
        assert as_admin.get(asset).status_code == 200, asset


def _deploy_warnings(**env: str) -> set[str]:
    """The ids of `manage.py check --deploy`'s security warnings under production settings."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env=_base_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return set(re.findall(r"\((security\.W\d+)\)", result.stdout + result.stderr))


def test_hsts_and_ssl_redirect_come_from_the_environment():
    assert {"security.W004", "security.W008"} <= _deploy_warnings()  # off unless asked for
    assert not {"security.W004", "security.W008"} & _deploy_warnings(
        SECURE_HSTS_SECONDS="31536000", SECURE_SSL_REDIRECT="1"
    )
