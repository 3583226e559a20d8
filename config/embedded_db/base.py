"""Django's PostgreSQL backend, pointed at the embedded server, which it starts on first use and
stops when the last process using it exits, if it started it (lease.py).

Starting on first connection (not at settings import) keeps `manage.py help`, `collectstatic` and
the like from touching a database.
"""

from pathlib import Path

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base, client

from . import lease, server

_running: server.Running | None = None


def _ensure(settings_dict: dict) -> None:
    global _running
    # The process holds a lease on the server from its first connection to its exit (lease.py): a
    # server it started stops when its last user exits, unless EMBEDDED_PG_KEEP.
    pgdata = Path(settings.EMBEDDED_PGDATA)
    if _running is None:
        # Only a process's first connection may start the server.
        _running = lease.use(pgdata, keep=getattr(settings, "EMBEDDED_PG_KEEP", False))
    elif not server.is_our_postgres(_running.pid, pgdata):
        # The server went away under a running process: an operator's `pg_ctl stop` or `make stop-db`
        # (or a crash). Starting it again from here would undo the operator's stop (web servers and
        # workers reconnect all the time), so this is a connection error like any database that went
        # away, until someone starts the server again; then this process finds and uses it.
        found = server.find_running(pgdata.resolve())
        if found is None:
            raise psycopg.OperationalError(
                f"the embedded PostgreSQL of {pgdata} is not running (stopped by pg_ctl or make stop-db?); "
                "a new manage.py command or make run starts it again"
            )
        _running = found
    running = _running
    settings_dict["HOST"] = str(running.socket_dir)
    settings_dict["PORT"] = str(running.port)


class DatabaseClient(client.DatabaseClient):
    def runshell(self, parameters):
        _ensure(self.connection.settings_dict)
        # dbshell runs `psql`: use the wheel's, which a machine with no PostgreSQL has no other copy of.
        import os

        os.environ["PATH"] = server.psql_env()["PATH"]
        super().runshell(parameters)


class DatabaseWrapper(base.DatabaseWrapper):
    client_class = DatabaseClient

    def get_connection_params(self):
        _ensure(self.settings_dict)
        return super().get_connection_params()
