"""Bulk writes into a pool: one import at a time per pool, and foreign keys checked set-wise.

Every import into a pool first takes the pool's import lock (`lock_pool`, a transaction-level
advisory lock): imports into one pool run one after the other, so two of them never wait on each
other's new documents, pairs or judgments in opposite orders (a deadlock), and what one creates the
next one finds. Imports into different pools do not wait for each other.

PostgreSQL checks a foreign key with one trigger call per inserted row, at commit (Django's keys are
DEFERRABLE INITIALLY DEFERRED): a 1,000,000-line qrels file queued ten million of them, 47-113 s of
its commit. Inside `rows_checked_in_bulk` an import writes with those triggers off
(`session_replication_role = replica`, when the database role may set it: a superuser, such as the
embedded PostgreSQL's, or a role granted `SET ON PARAMETER session_replication_role`) and does what
they would have done, set-wise: it takes the same FOR KEY SHARE lock on every row its new rows refer
to (so none of them can be deleted before the commit), and finds them all there. Its keys come from
its own lookups in the same transaction, so the check cannot fail but for a row deleted meanwhile;
it then raises IntegrityError, as the commit would have. The judgment history triggers fire ALWAYS
(migration 0012), so every change is still logged, with who and when. Without the privilege, the
same statements run with the row triggers on: slower, and the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from django.db import IntegrityError, connection, transaction

# First key of pg_advisory_xact_lock(key, pool id): "import".
_IMPORT_LOCK = 0x1A9_0127
# work_mem of the set-wise statements of an import (local_settings): the sorts and hash joins of a
# million rows stay in memory (4MB sorted the history of 1,000,000 judgments on disk, and ran the
# UPDATE path's hash join in 8 batches).
WORK_MEM = "256MB"


def lock_pool(cursor, pool_pk: int) -> None:
    """Wait for the imports into this pool that are running, and hold its import lock until the commit."""
    cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_IMPORT_LOCK, pool_pk])


@contextmanager
def local_settings(cursor, **settings: str):
    """Run the block with these server settings (e.g. work_mem="256MB"), then put back the values they
    had: unlike SET LOCAL, what the caller runs later in its transaction does not inherit them. An error
    leaves them set, for the caller's atomic block to roll back with the rest (a savepoint's rollback
    restores the settings it changed)."""
    names = list(settings)
    cursor.execute(f"SELECT {', '.join(['current_setting(%s)'] * len(names))}", names)
    before = cursor.fetchone()
    set_all = f"SELECT {', '.join(['set_config(%s, %s, true)'] * len(names))}"
    cursor.execute(set_all, [x for name in names for x in (name, settings[name])])
    yield
    cursor.execute(set_all, [x for name, value in zip(names, before, strict=True) for x in (name, value)])


def _may_skip_row_triggers(cursor) -> bool:
    # has_parameter_privilege exists from PostgreSQL 15 on; naming it in a statement fails before.
    if connection.pg_version >= 150000:
        may_set = " OR has_parameter_privilege('session_replication_role', 'SET')"
    else:
        may_set = ""
    cursor.execute(f"SELECT rolsuper{may_set} FROM pg_roles WHERE rolname = current_user")
    row = cursor.fetchone()
    return bool(row and row[0])


@contextmanager
def rows_checked_in_bulk(cursor, references: Sequence[tuple[str, str, Sequence]] = ()):
    """Run the block with the per-row foreign-key triggers off, if the role may, then check the block's
    references set-wise: each (table, query giving ids, params) names rows of `table` that the rows
    written refer to. Yields whether the triggers were off. Use it as
    `with transaction.atomic(), rows_checked_in_bulk(cursor, ...)`: an error must roll the block back."""
    if not connection.in_atomic_block:
        raise RuntimeError("rows_checked_in_bulk needs a transaction")
    off = _may_skip_row_triggers(cursor)
    if off:
        cursor.execute("SET LOCAL session_replication_role = replica")
    # An error leaves the setting as it is: it propagates out of the caller's atomic block, whose
    # rollback undoes the SET LOCAL with the rows.
    yield off
    if off:
        cursor.execute("SET LOCAL session_replication_role = origin")
        for table, ids, params in references:
            lock_referenced(cursor, table, ids, params)


def lock_referenced(cursor, table: str, ids: str, params: Sequence = ()) -> None:
    """FOR KEY SHARE on every row of `table` whose id the query `ids` gives (what the foreign-key
    trigger does row by row); IntegrityError if one of them is not there."""
    cursor.execute(
        f"""
        WITH wanted AS (SELECT DISTINCT w.id FROM ({ids}) AS w (id) WHERE w.id IS NOT NULL),
        locked AS (SELECT t.id FROM {table} t WHERE t.id IN (SELECT id FROM wanted) FOR KEY SHARE OF t)
        SELECT (SELECT count(*) FROM wanted), (SELECT count(*) FROM locked)
        """,
        list(params),
    )
    wanted, locked = cursor.fetchone()
    if wanted != locked:
        transaction.set_rollback(True)
        raise IntegrityError(
            f"{wanted - locked} row(s) of {table} that this import refers to were deleted meanwhile"
        )
