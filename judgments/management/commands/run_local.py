"""`make run`: migrate, load the demo, then serve the app, a task worker and the demo search engine (a
thread of this process, judgments.capture.demo) until Ctrl-C.

The web server (runserver, its database connections from a pool: settings.DB_POOL_SIZE) and the worker
are child processes, kept running by a `Supervisor`: a child that exits
(a crash, `kill -9`, out of memory) is said on stderr and started again, after a pause that grows while
it keeps dying at once; the other child and the database keep running meanwhile. Only Ctrl-C (or SIGTERM)
stops the children, then the embedded PostgreSQL (when it is the one in use), unless another process (a
test run, a command) still uses it: the last of those stops it (config/embedded_db/lease.py). Children
also die with this process if it is killed (Linux PR_SET_PDEATHSIG), so a `kill -9` leaves no server
holding the port; the database stays up and the next run reuses it, or replaces its stale pid file.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

from judgments.capture import demo

FIRST_PAUSE, MAX_PAUSE = 1.0, 30.0  # seconds before restarting a child; doubled while it dies quickly
QUICK_DEATH = 30.0  # a child that ran less than this long died quickly
WEB_POOL_SIZE = 10  # database connections of the web server, however many browser connections it serves


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class _Child:
    name: str
    command: list[str]
    env: dict[str, str] | None = None  # None: this process's environment
    process: subprocess.Popen | None = None
    started: float = 0.0
    pause: float = FIRST_PAUSE
    restart_at: float | None = None
    restarts: int = 0
    pids: list[int] = field(default_factory=list)


class Supervisor:
    """Starts named commands and keeps them running: `check()` restarts the ones that exited."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        say=print,
        clock=time.monotonic,
        env: dict[str, dict] | None = None,
    ):
        """`env`: extra environment variables of some children, by name."""
        env = env or {}
        self.children = [
            _Child(name, command, {**os.environ, **env[name]} if name in env else None)
            for name, command in commands.items()
        ]
        self.say = say
        self.clock = clock

    def _start(self, child: _Child) -> None:
        child.process = subprocess.Popen(child.command, env=child.env, preexec_fn=_die_with_parent)
        child.started = self.clock()
        child.restart_at = None
        child.pids.append(child.process.pid)

    def start(self) -> None:
        for child in self.children:
            self._start(child)

    def check(self) -> None:
        """Restart every child that exited, once its pause is over."""
        now = self.clock()
        for child in self.children:
            if child.restart_at is None:
                code = child.process.poll()
                if code is None:
                    continue
                ran = now - child.started
                if ran >= QUICK_DEATH:
                    child.pause = FIRST_PAUSE
                child.restart_at = now + child.pause
                how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
                self.say(
                    f"{child.name} {how} after {ran:.0f} s; starting it again in {child.pause:.0f} s "
                    "(the rest keeps running)"
                )
                child.pause = min(child.pause * 2, MAX_PAUSE)  # should it die quickly again
            elif now >= child.restart_at:
                self._start(child)
                child.restarts += 1
                self.say(f"{child.name} started again (pid {child.process.pid})")

    def stop(self, timeout: float = 15) -> None:
        running = [c.process for c in self.children if c.process and c.process.poll() is None]
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Command(BaseCommand):
    help = (
        "Migrate, seed the demo, and run the web server plus a task worker; a child that dies is started "
        "again; Ctrl-C stops everything, the embedded database included."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo data")

    def handle(self, *args, port, host, no_demo, **options):
        if not settings.DATABASE_URL:
            from config.embedded_db import lease

            # Kept up for the web server and the worker (they find it running), stopped at the end.
            lease.use(Path(settings.EMBEDDED_PGDATA), keep=True)
        connection.ensure_connection()
        call_command("migrate", interactive=False, verbosity=0)
        engine = None
        if not no_demo:
            call_command("seed_demo")
            engine = demo.start_engine()
            if engine is not None:
                self.stdout.write(
                    f"Demo search engine (BM25) on {engine.url}, asked by {demo.LIVE_CONFIGURATION}"
                )
        connection.close()
        python, manage = sys.executable, str(Path(settings.BASE_DIR) / "manage.py")
        supervisor = Supervisor(
            {
                "task worker": [python, manage, "db_worker", "--queue-name", "default", "--no-reload"],
                "web server": [python, manage, "runserver", f"{host}:{port}", "--noreload"],
            },
            say=lambda message: self.stderr.write(message),
            # runserver starts a thread per browser connection: each request borrows a pooled database
            # connection instead of its thread keeping one (settings.DB_POOL_SIZE).
            env={"web server": {"DB_POOL_SIZE": os.environ.get("DB_POOL_SIZE") or str(WEB_POOL_SIZE)}},
        )
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        supervisor.start()
        for child in supervisor.children:
            self.stderr.write(f"{child.name}: pid {child.process.pid}")
        self.stdout.write(
            self.style.SUCCESS(f"Serving on http://{host}:{port}/  (Ctrl-C stops the app and its database)")
        )
        try:
            while not stopping:
                supervisor.check()
                time.sleep(0.3)
        finally:
            supervisor.stop()
            if engine is not None:
                engine.stop()
            if not settings.DATABASE_URL:
                from config.embedded_db import lease, server

                if lease.leave(stop=True):
                    self.stdout.write("Embedded PostgreSQL stopped.")
                elif server.find_running(Path(settings.EMBEDDED_PGDATA).resolve()):
                    self.stdout.write("Embedded PostgreSQL left running: other processes use it.")
