"""The production server for the load benchmarks: collectstatic, then gunicorn with DEBUG off on this
database; tests/test_production.py starts its server the same way."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from tests.database import database_url

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(static_root: Path, **extra: str) -> dict:
    """Production settings on this process's database; sessions made here stay valid (same SECRET_KEY)."""
    connection.ensure_connection()
    url = database_url(connection.settings_dict)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SECURE_"))}
    env.update(
        DEBUG="0",
        SECRET_KEY=settings.SECRET_KEY,
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=url,
        STATIC_ROOT=str(static_root),
        SECURE_COOKIES="0",  # plain HTTP on 127.0.0.1
        LOG_LEVEL="WARNING",
        **extra,
    )
    return env


def start_gunicorn(env: dict, log, *, workers: int, timeout: int = 30) -> tuple[subprocess.Popen, str]:
    """collectstatic, then gunicorn on a free port; returns the process and the base URL once /healthz
    answers."""
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if collected.returncode != 0:
        raise CommandError(f"collectstatic failed: {collected.stderr[-2000:]}")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--timeout",
            str(timeout),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise CommandError("gunicorn did not come up (see its log)")
        time.sleep(0.2)


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
