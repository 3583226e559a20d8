"""Who uses the embedded PostgreSQL, and who stops it: nothing is left running by a one-off command.

Every process that connects holds a lease, a shared `flock` on `<pgdata>.users`, for its lifetime
(the kernel drops it when the process dies, however it dies). A process that *started* the server
marks it with `<pgdata>.autostop`. At exit, a process gives its lease back and, if the server is
marked, tries the lock exclusively: only the last user out gets it, and stops the server. So:

- a one-off `manage.py` command or `make test` that started the server stops it when it is the last
  one using it (another command still running keeps it up, and stops it itself when done);
- a server that was already running (under `make run`, or started by hand) is left alone: nobody
  marked it;
- `make run` (run_local) takes a lease with keep=True for the life of its web server and worker, and
  at Ctrl-C stops the server unless another process still uses it (which then stops it, as marked).
- EMBEDDED_PG_KEEP=1 keeps the server up after a command (many commands in a loop); `make stop-db`.

A process waiting for its lease blocks while the last user out is stopping the server, then starts it
again: a command never connects to a server that is going away.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from . import server


@dataclass
class _Lease:
    pid: int
    pgdata: Path
    handle: IO[str]


_lease: _Lease | None = None


def users_file(pgdata: Path) -> Path:
    return pgdata.parent / (pgdata.name + ".users")


def autostop_marker(pgdata: Path) -> Path:
    return pgdata.parent / (pgdata.name + ".autostop")


def use(pgdata: Path, *, keep: bool = False) -> server.Running:
    """This process's use of the server of `pgdata`, started if needed. A server this call starts is
    stopped when its last user exits, unless `keep` (which also unmarks a server others started)."""
    pgdata = pgdata.resolve()
    _take(pgdata)
    running = server.ensure_running(pgdata)
    marker = autostop_marker(pgdata)
    if keep:
        marker.unlink(missing_ok=True)
    elif running.started:
        marker.touch()
    return running


def _take(pgdata: Path) -> None:
    global _lease
    if _lease is not None and _lease.pid == os.getpid() and _lease.pgdata == pgdata:
        return
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    handle = open(users_file(pgdata), "a+")  # noqa: SIM115 - held for the life of the process
    fcntl.flock(handle, fcntl.LOCK_SH)  # waits while the last user out stops the server
    if _lease is None:
        atexit.register(leave)
    _lease = _Lease(os.getpid(), pgdata, handle)


def leave(*, stop: bool | None = None) -> bool:
    """Give this process's lease back. The server stops if it is marked (or `stop`) and no other
    process uses it; if others do, it is marked and the last of them stops it. Returns whether it
    stopped. A no-op without a lease, and in a forked child (the parent's lease is the parent's)."""
    global _lease
    lease = _lease
    if lease is None or lease.pid != os.getpid():
        return False
    _lease = None
    marker = autostop_marker(lease.pgdata)
    try:
        wanted = stop if stop is not None else marker.exists()
        fcntl.flock(lease.handle, fcntl.LOCK_UN)
        if not wanted:
            return False
        try:
            fcntl.flock(lease.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            marker.touch()  # still in use: the last user out stops it
            return False
        try:
            stopped = server.stop(lease.pgdata)
            marker.unlink(missing_ok=True)
            return stopped
        finally:
            fcntl.flock(lease.handle, fcntl.LOCK_UN)
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return False  # at exit: never turn a finished command into a failure
    finally:
        lease.handle.close()
