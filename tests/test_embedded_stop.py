"""An operator's `pg_ctl stop` (or `make stop-db`) stops the embedded PostgreSQL for good: a web server
or worker that is still running gets connection errors, like with any database that went away, and
never starts the server again itself. It reconnects once someone starts the server again."""

import os
import subprocess
import sys
from pathlib import Path

from config.embedded_db import server

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import sys
import django
django.setup()
from django.db import OperationalError, connection

def attempt():
    connection.close()
    try:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "connected"
    except OperationalError as exc:
        return "refused: " + str(exc).splitlines()[0]

print(attempt(), flush=True)
for line in sys.stdin:
    print(attempt(), flush=True)
"""


def test_a_running_process_does_not_restart_a_server_the_operator_stopped(server_tmp):
    pgdata = (server_tmp / "pg").resolve()
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env |= {"DEBUG": "1", "EMBEDDED_PGDATA": str(pgdata), "DJANGO_SETTINGS_MODULE": "config.settings"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "connected"  # the child started the server
        first = server.find_running(pgdata)
        assert first is not None

        # The operator stops it (pg_ctl -m fast stop, as make stop-db does).
        assert server.stop(pgdata)
        child.stdin.write("\n")
        child.stdin.flush()
        answer = child.stdout.readline().strip()
        assert answer.startswith("refused: "), answer
        assert "not running" in answer
        assert server.find_running(pgdata) is None  # still stopped: the child did not start it

        # Started again (by `make run`, a command, or pg_ctl start): the running process reconnects.
        again = server.ensure_running(pgdata)
        assert again.pid != first.pid
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "connected"
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        server.stop(pgdata)
    assert server.find_running(pgdata) is None
