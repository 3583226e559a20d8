"""Nothing left running: a process that started the embedded PostgreSQL stops it when the last process
using it exits; a server that was already running (e.g. under `make run`) is left alone."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from config.embedded_db import lease, server
from tests.conftest import server_tmp_dir

ROOT = Path(__file__).resolve().parent.parent

USER = """
import sys
from pathlib import Path
from config.embedded_db import lease
lease.use(Path(sys.argv[1]), keep=sys.argv[2] == "keep")
print("ready", flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def pgdata():
    """A data dir initialised once for the module (initdb takes seconds), stopped between tests."""
    base = server_tmp_dir("lease")
    path = base / "pg"
    server.ensure_running(path)
    server.stop(path)
    yield path.resolve()
    server.stop(path)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def stopped(pgdata):
    server.stop(pgdata)
    lease.autostop_marker(pgdata).unlink(missing_ok=True)
    yield
    server.stop(pgdata)


class User:
    """A process using the server through a lease, until finish()."""

    def __init__(self, pgdata: Path, *, keep: bool = False):
        self.process = subprocess.Popen(
            [sys.executable, "-c", USER, str(pgdata), "keep" if keep else "use"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout.readline().strip() == "ready"

    def finish(self) -> None:
        self.process.communicate("\n", timeout=60)
        assert self.process.returncode == 0


def running(pgdata: Path) -> bool:
    return server.find_running(pgdata) is not None


def test_a_process_that_started_the_server_stops_it_at_exit(pgdata):
    user = User(pgdata)
    assert running(pgdata)
    user.finish()
    assert not running(pgdata)
    assert not lease.autostop_marker(pgdata).exists()


def test_the_last_process_out_stops_it_not_the_first(pgdata):
    starter = User(pgdata)
    joiner = User(pgdata)
    starter.finish()
    assert running(pgdata), "another process still uses it"
    joiner.finish()
    assert not running(pgdata)


def test_a_server_that_was_already_running_is_left_alone(pgdata):
    server.ensure_running(pgdata)  # started by hand, or by make run
    User(pgdata).finish()
    User(pgdata).finish()
    assert running(pgdata)


def test_keep_leaves_the_server_running(pgdata):
    """EMBEDDED_PG_KEEP=1 (many commands in a loop): the server stays up until make stop-db."""
    User(pgdata, keep=True).finish()
    assert running(pgdata)
    User(pgdata).finish()
    assert running(pgdata)


def test_a_keeper_that_asks_for_a_stop_hands_it_to_the_last_user(pgdata):
    """make run's Ctrl-C while a test run uses the server: the test run stops it when it is done."""
    other = User(pgdata)
    lease.use(pgdata, keep=True)
    try:
        assert lease.leave(stop=True) is False
        assert running(pgdata)
    finally:
        lease.leave()
    other.finish()
    assert not running(pgdata)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(pgdata: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "EMBEDDED_PG_KEEP")}
    env.update(DEBUG="1", ENV_FILE="", EMBEDDED_PGDATA=str(pgdata))
    return {k: v for k, v in env.items() if not k.startswith("PYTEST")}


@pytest.mark.slow
def test_make_run_keeps_the_server_for_one_off_commands_and_stops_it_at_ctrl_c(pgdata):
    env = _env(pgdata)
    manage = [sys.executable, "manage.py"]
    app = subprocess.Popen(
        [*manage, "run_local", "--no-demo", "--port", str(_free_port())],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        for line in app.stdout:
            if "Serving on" in line or time.monotonic() > deadline:
                break
        assert running(pgdata)
        one_off = subprocess.run(
            [*manage, "export_queries", "--pool", "nothing-here"], cwd=ROOT, env=env, capture_output=True
        )
        assert one_off.returncode == 1  # no such pool: it ran against the database and exited
        assert running(pgdata), "a one-off command leaves make run's database alone"
    finally:
        app.send_signal(signal.SIGINT)
        output = app.communicate(timeout=90)[0]
    assert "Embedded PostgreSQL stopped." in output
    assert not running(pgdata)


@pytest.mark.slow
def test_a_test_run_stops_the_server_it_started(pgdata):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/test_embedded_postgres.py::test_another_data_dirs_postgres_is_not_ours",
        ],
        cwd=ROOT,
        env=_env(pgdata),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert not running(pgdata)
