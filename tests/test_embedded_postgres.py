"""The embedded server's pid file is trusted only when it names this data dir's postgres."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.embedded_db import server


def _fake_postmaster(pgdata: Path, pid: int) -> None:
    pgdata.mkdir(exist_ok=True)
    (pgdata / "postmaster.pid").write_text(
        f"{pid}\n{pgdata}\n1700000000\n5432\n{pgdata}\n\n  1234 5678\nready\n"
    )


def test_stale_pid_file_naming_an_unrelated_live_process_is_removed_not_signalled(tmp_path):
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        pgdata = tmp_path / ".pgdata"
        _fake_postmaster(pgdata, unrelated.pid)
        assert server.find_running(pgdata) is None
        assert not (pgdata / "postmaster.pid").exists()
        assert server.stop(pgdata) is False
        assert unrelated.poll() is None, "the unrelated process must not be signalled"
    finally:
        unrelated.kill()
        unrelated.wait()


def test_pid_file_naming_a_dead_process_is_stale(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    pgdata = tmp_path / ".pgdata"
    _fake_postmaster(pgdata, gone.pid)
    assert server.find_running(pgdata) is None


def test_another_data_dirs_postgres_is_not_ours(tmp_path, settings, db):
    from django.db import connection

    if connection.settings_dict["ENGINE"] != "config.embedded_db":
        pytest.skip("tests run against DATABASE_URL, not the embedded server")
    running = server.find_running(Path(settings.EMBEDDED_PGDATA))
    assert running is not None and server.is_our_postgres(running.pid, Path(settings.EMBEDDED_PGDATA))
    assert not server.is_our_postgres(running.pid, tmp_path / ".pgdata")


def test_dbshell_finds_the_wheels_psql():
    path = server.which_psql()
    assert path is not None and Path(path).parent == server.bin_dir()


def test_secret_key_is_required_without_debug():
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    env["ENV_FILE"] = ""  # a checkout's .env (make run) would set DEBUG=1
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup()",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_bad_boolean_is_refused():
    from config.settings import env_bool

    os.environ["JL_TEST_FLAG"] = "maybe"
    try:
        with pytest.raises(ImproperlyConfigured, match="JL_TEST_FLAG"):
            env_bool("JL_TEST_FLAG")
    finally:
        del os.environ["JL_TEST_FLAG"]


def test_a_killed_server_does_not_block_the_next_start(server_tmp):
    """kill -9 of the postmaster leaves postmaster.pid behind; the next start must recover."""
    import signal
    import time

    import psycopg

    pgdata = server_tmp / "pg"
    first = server.ensure_running(pgdata)
    try:
        os.kill(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while server.is_our_postgres(first.pid, pgdata) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (pgdata / "postmaster.pid").exists()
        second = server.ensure_running(pgdata)
        assert second.pid != first.pid
        with psycopg.connect(
            host=str(second.socket_dir), port=second.port, user="postgres", dbname="judgments"
        ) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop(pgdata)
    assert server.find_running(pgdata) is None
