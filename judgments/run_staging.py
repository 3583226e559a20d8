"""The staging entry point of the one run writer (judgments.services.store_run), for a run that is still
arriving (a capture): the rankings are checked, their documents looked up and their rows staged while
the engine answers the other queries, so that the run's own transaction at the end is short (an insert
from the staging table and the commit, where `record_run` would check, look up and copy everything
after the last answer).

`RunWriter(configuration, query_pks)`: `add(query_id, doc_ids)` for each answered query, in the
caller's thread (the one holding the database connection); every `BATCH` rankings it checks them as
`judgments.services.validate_rankings` does, maps document ids to keys (a cache of the ids seen so far,
the misses looked up in one statement), and COPYs the rows into a temporary table of this connection's
session. `store(...)` then writes the run in one transaction: documents not in the pool yet are created
without content (exactly as a run import creates them), the run row, its rankings copied from the
staging table on the server, and `run_submitted`, which scores it after the commit. `close()` drops the
staging table.

Nothing reaches the pool's tables before `store()`: a temporary table is seen by its session only, is
not written ahead to the log, and goes when the session ends, so a capture that is cancelled, fails or
whose process is killed leaves nothing behind. A document unknown to the pool is staged as a negative
placeholder (-1 for the first such id, -2 for the next...) and replaced by its new key in `store()`.
A document deleted from the admin during the capture leaves its key in the run, as it does in every
stored run that ranked it (documents go with their pool; the admin is the only other way).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence

from django.db import DatabaseError, connection, transaction

from judgments import services as core
from judgments.models import Run, SearchConfiguration

logger = logging.getLogger(__name__)
BATCH = 250  # rankings staged at a time: few statements, and the last batch is small work at the end
MAX_PROBLEMS = 50
_ids = itertools.count(1)


class RunWriter:
    """A run of `configuration` staged ranking by ranking (see the module doc); `query_pks` maps the
    pool's query ids to keys. `checked`: the document ids come from `answers.read_answer`, which refuses
    what `validate_rankings` would (empty ids, whitespace, a repeat) and more, so they are not checked
    again (0.17 s for 5,000 rankings of 100)."""

    def __init__(
        self, configuration: SearchConfiguration, query_pks: Mapping[str, int], *, checked: bool = False
    ):
        self.configuration = configuration
        self.pool_id = configuration.pool_id
        self.query_pks = query_pks
        self.table = f"jl_capture_stage_{next(_ids)}"
        self.checked = checked
        self.doc_keys: dict[str, str] = {}  # every document id seen: its key, or a negative placeholder
        self.unknown: list[str] = []  # ids not in the pool, placeholder -(i + 1) for unknown[i]
        self.pending: dict[str, Sequence[str]] = {}
        self.problems: list[tuple[str, str]] = []
        self.staged = 0
        self.created = False

    def add(self, query_id: str, doc_ids: Sequence[str]) -> None:
        self.pending[query_id] = doc_ids
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Stage the pending rankings; a ranking with a problem is noted, and nothing more is staged."""
        if not self.pending:
            return
        rankings, self.pending = self.pending, {}
        if len(self.problems) < MAX_PROBLEMS:
            # Ids that answers.read_answer passed need no other check; anything else gets the import's.
            if not self.checked:
                self.problems += core.validate_rankings(rankings)
            self.problems += [(q, "unknown query") for q in rankings if q not in self.query_pks]
        if self.problems:
            del self.problems[MAX_PROBLEMS:]
            return  # the run will not be stored: checking the rest is enough
        self._look_up(rankings.values())
        keys = self.doc_keys.__getitem__
        query_keys = self.query_pks
        lines = []
        for qid, docs in rankings.items():
            joined = ",".join(map(keys, docs))
            lines.append(f"{query_keys[qid]}\t{{{joined}}}\t{'t' if '-' in joined else 'f'}\n")
        with connection.cursor() as cursor:
            if not self.created:
                cursor.execute(
                    f"CREATE TEMP TABLE {self.table} (query_id bigint, doc_ids bigint[], unknown boolean)"
                )
                self.created = True
            with cursor.copy(f"COPY {self.table} (query_id, doc_ids, unknown) FROM STDIN") as copy:
                copy.write("".join(lines))
        self.staged += len(lines)

    def stage_run(self, run: Run) -> int:
        """Stage every ranking of a stored run of the same pool as it is (a partial run being completed);
        the number staged. The queries added after it must be others (one ranking per query)."""
        with connection.cursor() as cursor:
            if not self.created:
                cursor.execute(
                    f"CREATE TEMP TABLE {self.table} (query_id bigint, doc_ids bigint[], unknown boolean)"
                )
                self.created = True
            cursor.execute(
                f"INSERT INTO {self.table} (query_id, doc_ids, unknown)"
                " SELECT query_id, doc_ids, false FROM judgments_ranking WHERE run_id = %s",
                [run.pk],
            )
            staged = cursor.rowcount
        self.staged += staged
        return staged

    def _look_up(self, rankings) -> None:
        """Keys of the documents not seen yet (as text, ready for COPY); those not in the pool get
        placeholders."""
        seen = self.doc_keys
        missing = {doc for docs in rankings for doc in docs if doc not in seen}
        if not missing:
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT external_id, id::text FROM judgments_document"
                " WHERE pool_id = %s AND external_id = ANY(%s)",
                [self.pool_id, list(missing)],
            )
            seen.update(cursor.fetchall())
        for doc in missing:
            if doc not in seen:
                self.unknown.append(doc)
                seen[doc] = str(-len(self.unknown))

    @transaction.atomic
    def store(self, *, source: str, submitted_by=None, tag: str = "", endpoint=None) -> Run:
        """Write the staged run in one transaction; RunError (nothing written) if a ranking had a problem
        or none was given."""
        self.flush()
        if self.problems:
            raise core.RunError(
                f"The run has {len(self.problems)} problem(s); nothing was stored.", self.problems
            )
        if not self.staged:
            raise core.RunError(
                "The run has no ranking; nothing was stored.", [("", "the run has no ranking")]
            )
        new = core.ensure_documents(self.configuration.pool, self.unknown) if self.unknown else {}

        def write_rankings(cursor, run: Run) -> None:
            # Placeholder -i is the i-th new document: its key is element i of the array parameter.
            cursor.execute(
                f"""
                INSERT INTO judgments_ranking (run_id, query_id, doc_ids)
                SELECT %s, s.query_id, CASE WHEN NOT s.unknown THEN s.doc_ids ELSE ARRAY(
                    SELECT CASE WHEN x < 0 THEN (%s::bigint[])[-x] ELSE x END
                    FROM unnest(s.doc_ids) WITH ORDINALITY AS u(x, i) ORDER BY i) END
                FROM {self.table} s
                """,
                [run.pk, [new[doc] for doc in self.unknown]],
            )

        return core.store_run(
            self.configuration,
            write_rankings,
            source=source,
            submitted_by=submitted_by,
            tag=tag,
            endpoint=endpoint,
        )

    def close(self) -> None:
        """Drop the staging table (it would go with the session anyway; a worker's session lives on)."""
        self.pending = {}
        if not self.created:
            return
        self.created = False
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {self.table}")
        except DatabaseError:  # a broken connection or an aborted transaction: the table goes with it
            logger.warning("could not drop the capture's staging table %s", self.table, exc_info=True)
