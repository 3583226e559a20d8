"""`make run` under load: the app started the way `make run` starts it (manage.py run_local: runserver and a
task worker) serves 32 raters grading at once with no error, and the database holds exactly the grades the
server acknowledged, none twice, no pair past its raters-per-pair."""

import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from django.test import Client

from judgments.models import Judgment
from tests.bench import raters as load

ROOT = Path(__file__).resolve().parents[3]
N_RATERS, N_QUERIES, DOCS_PER_QUERY, RATERS_PER_PAIR = 32, 8, 8, 2
BROWSER_CONNECTIONS = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def crowd(child_env, pool, make_rater, queued):
    """`pool` with 8 x 8 queued pairs wanting 2 grades each (128 grades: 4 a rater), and 32 raters."""
    pool.raters_per_pair = RATERS_PER_PAIR
    pool.save()
    for q in range(N_QUERIES):
        for d in range(DOCS_PER_QUERY):
            queued(pool, f"lq{q:02d}", f"ld{d:02d}", priority=1000 - q)
    return pool, [make_rater(f"load{i:02d}") for i in range(N_RATERS)]


@pytest.fixture
def make_run(child_env, tmp_path):
    """run_local as `make run` starts it (without the demo data); yields its base URL and log."""
    port = _free_port()
    log_path = tmp_path / "run_local.log"
    log = open(log_path, "w")
    parent = subprocess.Popen(
        [sys.executable, "manage.py", "run_local", "--no-demo", "--port", str(port)],
        cwd=ROOT,
        env=child_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if parent.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"run_local did not come up:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield base, log_path
    finally:
        parent.send_signal(signal.SIGTERM)
        try:
            parent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            parent.kill()
            parent.wait()
        log.close()


@pytest.mark.slow
def test_make_run_serves_32_raters_grading_at_once(crowd, make_run):
    pool, raters = crowd
    base, log_path = make_run
    t0 = time.monotonic()
    # Sessions made here: logging in through the page would time PBKDF2, not the app.
    sessions = []
    for rater in raters:
        django_client = Client()
        django_client.force_login(rater)
        sessions.append(load.with_session(base, django_client.cookies["sessionid"].value))
    # Each rater's requests go over 6 keep-alive connections, as a browser's do: runserver keeps a
    # thread per open connection, and each used to keep its database connection (CONN_MAX_AGE).
    clients = {
        r.username: load.browser_like(s, BROWSER_CONNECTIONS) for r, s in zip(raters, sessions, strict=True)
    }
    try:
        began = time.monotonic()
        outcome = load.grade_concurrently(clients, pool.name, think=(0.0, 0.05), seed=16)
        print(f"sessions {began - t0:.1f} s; {outcome.requests} requests in {time.monotonic() - began:.1f} s")
    finally:
        for connections in clients.values():
            for client in connections:
                client.close()
    log = log_path.read_text()
    assert outcome.errors == [], (outcome.errors[:5], log[-3000:])
    assert "too many clients" not in log and "Traceback" not in log, log[-3000:]
    assert outcome.refused == []

    stored = Counter(
        (username, pair, grade)
        for username, pair, grade in Judgment.objects.filter(pair__pool=pool).values_list(
            "rater__username", "pair_id", "grade"
        )
    )
    acknowledged = Counter(outcome.acknowledged)
    assert stored == acknowledged  # every acknowledged grade stored, nothing else, none twice
    per_pair = Counter(pair for _, pair, _ in outcome.acknowledged)
    assert max(per_pair.values()) == RATERS_PER_PAIR  # none over-assigned
    assert len(per_pair) == N_QUERIES * DOCS_PER_QUERY  # and the whole queue got graded
    assert sum(per_pair.values()) == N_QUERIES * DOCS_PER_QUERY * RATERS_PER_PAIR
    assert not re.search(r"HTTP/1\.1\" 5\d\d", log), log[-3000:]
