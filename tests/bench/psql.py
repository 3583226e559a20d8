"""psql for the benchmarks' references: the embedded server's own psql (or one on PATH), pointed at the
database Django uses."""

from __future__ import annotations

import os
import subprocess

from django.core.management.base import CommandError
from django.db import connection


def psql_args() -> list[str]:
    """The psql command line for Django's database (quiet, stop on the first error)."""
    from config.embedded_db import server

    connection.ensure_connection()
    db = connection.settings_dict
    candidates = [server.bin_dir() / "psql"] if db["ENGINE"] == "config.embedded_db" else []
    psql = next((str(p) for p in candidates if p.exists()), None) or server.which_psql()
    if psql is None:
        raise CommandError("psql not found")
    args = [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db["NAME"], "-U", db["USER"] or "postgres"]
    if db["HOST"]:
        args += ["-h", str(db["HOST"])]
    if db["PORT"]:
        args += ["-p", str(db["PORT"])]
    return args


def psql_env() -> dict:
    env = dict(os.environ)
    if connection.settings_dict.get("PASSWORD"):
        env["PGPASSWORD"] = connection.settings_dict["PASSWORD"]
    return env


def run_psql(args: list[str], *extra: str, stdout=subprocess.DEVNULL) -> None:
    """Run psql (`args` from psql_args) with `extra` arguments, e.g. "-c", "COPY ..."."""
    subprocess.run([*args, *extra], check=True, stdout=stdout, env=psql_env())
