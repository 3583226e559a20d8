"""Django's PostgreSQL backend, pointed at the embedded server, which it starts on first use and
stops when the last process using it exits, if it started it (lease.py).

Starting on first connection (not at settings import) keeps `manage.py help`, `collectstatic` and
the like from touching a database.
"""

from pathlib import Path

from django.conf import settings
from django.db.backends.postgresql import base, client

from . import lease, server

_running: server.Running | None = None


def _ensure(settings_dict: dict) -> None:
    global _running
    # Checked once per process; a server that later vanishes shows up as a connection error.
    # The process holds a lease on the server from its first connection to its exit (lease.py): a
    # server it started stops when its last user exits, unless EMBEDDED_PG_KEEP.
    if _running is None or not server.is_our_postgres(_running.pid, Path(settings.EMBEDDED_PGDATA)):
        _running = lease.use(
            Path(settings.EMBEDDED_PGDATA), keep=getattr(settings, "EMBEDDED_PG_KEEP", False)
        )
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
