"""`manage.py`: Django's command line, for people rather than for tracebacks.

- Settings that cannot load (no SECRET_KEY outside DEBUG, a bad variable) end in one line saying what
  to set, instead of a traceback.
- The embedded PostgreSQL (no DATABASE_URL) is prepared on first use: a command that reads the app's
  tables applies the missing migrations first, so a fresh checkout needs no `migrate` step.
- A database that cannot be reached or has no tables, Ctrl-C, a closed pipe (`export_qrels | head`),
  and an unexpected error in one of the app's own commands each end in one line and a non-zero exit.
  `--traceback` shows the traceback as usual.
- Start-up counts, since exports and imports run as a process per file: once Django is set up, the
  objects of every imported module are moved out of the garbage collector's sight (`gc.freeze`); they
  live until exit anyway, and the last collection at exit no longer walks them (bench_export prints a
  process's start-up).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys

# Commands of other apps that read the app's tables (the app's own commands all do, but run_local,
# which migrates by itself).
_DATABASE_COMMANDS = {
    "changepassword",
    "createsuperuser",
    "db_worker",
    "dbshell",
    "drf_create_token",
    "dumpdata",
    "loaddata",
    "runserver",
    "shell",
}
_OWN_APPS = ("judgments", "scoring")
_HELP = {"help", "--help", "-h", "version", "--version"}


def fail(message: str, status: int = 1) -> None:
    sys.stderr.write(f"Error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def main(argv: list[str]) -> None:
    from django.core.management import execute_from_command_line

    command = argv[1] if len(argv) > 1 else "help"
    if "--traceback" in argv or command in _HELP:
        execute_from_command_line(argv)
        return
    try:
        _load_settings()
        _prepare_embedded_database(command)
        _freeze_imports()
        execute_from_command_line(argv)
    except KeyboardInterrupt:
        fail("interrupted; an import that was running stored nothing (imports are all or nothing).", 130)
    except BrokenPipeError:
        # The reader of stdout went away (`export_qrels ... | head`): not an error worth a word.
        _silence_stdout()
        raise SystemExit(1) from None
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - every other error becomes one line
        fail(_describe(exc, command))


def _load_settings() -> None:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018 - reading it loads the settings module
    except ImproperlyConfigured as exc:
        fail(str(exc))


def _freeze_imports() -> None:
    import django

    django.setup()  # what execute_from_command_line does first; a no-op when done already
    gc.freeze()


def _uses_app_tables(command: str) -> bool:
    from django.core.management import get_commands

    app = get_commands().get(command)
    if app is None:
        return False
    return (app in _OWN_APPS and command != "run_local") or command in _DATABASE_COMMANDS


def _prepare_embedded_database(command: str) -> None:
    """Migrate the embedded database before a command that reads the app's tables, when a migration on
    disk is not applied yet (first use of a fresh checkout, or after a `git pull`)."""
    import django
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"] != "config.embedded_db":
        return
    django.setup()
    if not _uses_app_tables(command):
        return
    from django.db import connection

    if not missing_migrations(connection):
        return
    from django.core.management import call_command

    sys.stderr.write("Preparing the embedded database (applying migrations; once)...\n")
    sys.stderr.flush()
    call_command("migrate", interactive=False, verbosity=0)
    connection.close()


def missing_migrations(connection) -> bool:
    """True when a migration file of an installed app is not recorded as applied. Cheap: reads the
    migration folders and one table, imports no migration (a real `migrate` decides what to do)."""
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader

    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('django_migrations') IS NOT NULL")
        if not cursor.fetchone()[0]:
            return True
        cursor.execute("SELECT app, name FROM django_migrations")
        applied = set(cursor.fetchall())
    for app in apps.get_app_configs():
        module, _ = MigrationLoader.migrations_module(app.label)
        try:
            spec = importlib.util.find_spec(module) if module else None
        except ImportError:
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        for folder in spec.submodule_search_locations:
            for filename in os.listdir(folder):
                name, dot, ext = filename.rpartition(".")
                if ext == "py" and dot and name[:1] not in ("_", "~") and (app.label, name) not in applied:
                    return True
    return False


def _describe(exc: Exception, command: str) -> str:
    """One line for an error that reached the command line."""
    from django.db import OperationalError, ProgrammingError

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, ProgrammingError) and "does not exist" in first:
        return (
            f"the database has no tables for this app yet ({first}). Run `python manage.py migrate` "
            "first (the embedded database, used without DATABASE_URL, is migrated by itself)."
        )
    if isinstance(exc, OperationalError):
        where = "DATABASE_URL" if os.environ.get("DATABASE_URL") else "the embedded PostgreSQL (.pgdata/)"
        return (
            f"cannot use the database at {where}: {first}. Check that the server runs and DATABASE_URL is "
            "right (without DATABASE_URL the embedded PostgreSQL is used)."
        )
    return (
        f"{command} stopped on an unexpected error: {type(exc).__name__}: {first}. Nothing was imported "
        "if it was an import; run it again with --traceback for the details and report them."
    )


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
