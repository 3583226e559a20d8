"""`make run`: migrate, load the demo, then serve the app, a task worker and the demo search engine (a
thread of this process, judgments.capture.demo) until Ctrl-C.

The web server and the worker are child processes. On Ctrl-C (or SIGTERM) both are stopped, then the
embedded PostgreSQL (when it is the one in use), unless another process (a test run, a command) still
uses it: the last of those stops it (config/embedded_db/lease.py). Children also die with this process if it is killed
(Linux PR_SET_PDEATHSIG), so a `kill -9` leaves no server holding the port; the database stays up and
the next run reuses it, or replaces its stale pid file.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

from judgments.capture import demo


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Command(BaseCommand):
    help = "Migrate, seed the demo, and run the web server plus a task worker (stops all on Ctrl-C)."

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
        children = [
            subprocess.Popen(
                [python, manage, "db_worker", "--queue-name", "default", "--no-reload"],
                preexec_fn=_die_with_parent,
            ),
            subprocess.Popen(
                [python, manage, "runserver", f"{host}:{port}", "--noreload"], preexec_fn=_die_with_parent
            ),
        ]
        self.stdout.write(
            self.style.SUCCESS(f"Serving on http://{host}:{port}/  (Ctrl-C stops the app and its database)")
        )
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.3)
        finally:
            if engine is not None:
                engine.stop()
            for child in children:
                if child.poll() is None:
                    child.terminate()
            for child in children:
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
            if not settings.DATABASE_URL:
                from config.embedded_db import lease, server

                if lease.leave(stop=True):
                    self.stdout.write("Embedded PostgreSQL stopped.")
                elif server.find_running(Path(settings.EMBEDDED_PGDATA).resolve()):
                    self.stdout.write("Embedded PostgreSQL left running: other processes use it.")
        failed = [c for c in children if c.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stopping:
            raise SystemExit(1)
