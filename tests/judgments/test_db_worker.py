"""`manage.py db_worker` survives the database going away (judgments/management/commands/db_worker.py):
two workers busy with tasks while their PostgreSQL restarts stay alive, log the outage once each, and run
a task queued after the restart. The server is the test's own (a temporary data dir), never the one the
other tests share."""

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from config.embedded_db import server

ROOT = Path(__file__).resolve().parents[2]
TASK = "tests.worker_tasks.pause_and_query"


def _manage(env, *args, timeout=300):
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _enqueue(env, n: int, seconds: float) -> None:
    _manage(
        env,
        "shell",
        "-c",
        f"from tests.worker_tasks import pause_and_query as t\nfor _ in range({n}): t.enqueue({seconds})",
    )


def _statuses(running) -> dict[str, int]:
    with psycopg.connect(
        host=str(running.socket_dir), port=running.port, user="postgres", dbname=server.DATABASE
    ) as conn:
        rows = conn.execute(
            "SELECT status, count(*) FROM django_tasks_database_dbtaskresult WHERE task_path = %s GROUP BY status",
            [TASK],
        ).fetchall()
    return dict(rows)


def _wait_for(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


@pytest.mark.slow
def test_workers_outlive_a_postgresql_restart_under_load(server_tmp):
    pgdata = server_tmp / ".pgdata"
    running = server.ensure_running(pgdata)
    url = f"postgres://postgres@{quote(str(running.socket_dir), safe='')}:{running.port}/{server.DATABASE}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST_"))}
    env.update(DEBUG="1", DATABASE_URL=url, CONN_MAX_AGE="0")
    workers, logs = [], []
    try:
        _manage(env, "migrate", "--no-input", "-v", "0")
        _enqueue(env, 40, 0.25)
        for n in range(2):
            log = open(server_tmp / f"worker{n}.log", "w+")
            logs.append(log)
            workers.append(
                subprocess.Popen(
                    [sys.executable, "manage.py", "db_worker", "--no-reload", "--interval", "0.2"],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        _wait_for(lambda: _statuses(running).get("SUCCESSFUL", 0) >= 4, "the workers to run some tasks")

        server.stop(pgdata)  # -m fast: every connection is cut, running tasks included
        time.sleep(3)
        assert all(w.poll() is None for w in workers), "a worker exited when the database went away"
        running = server.ensure_running(pgdata)

        _enqueue(env, 1, 0)  # queued after the restart
        _wait_for(lambda: not ({"READY", "RUNNING"} & set(_statuses(running))), "every task to finish")
        statuses = _statuses(running)
        assert statuses.get("SUCCESSFUL", 0) >= 41 - 2  # at most one task per worker was cut off ...
        assert statuses.get("FAILED", 0) <= 2  # ... and it is marked failed, not left running
        assert sum(statuses.values()) == 41
        assert all(w.poll() is None for w in workers), "a worker exited after the database came back"
        for log in logs:
            log.flush()
            log.seek(0)
            text = log.read()
            assert text.count("Database unavailable") == 1, text[-3000:]  # once per outage, not per try
            assert text.count("Database back after") == 1, text[-3000:]
            assert "Traceback" not in text, text[-3000:]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
        for log in logs:
            log.close()
        server.stop(pgdata)
