"""Storing a captured run while it is still arriving: the rankings are checked, their documents looked up
and their rows staged while the engine answers the other queries, so that the run's own transaction at
the end is short (tests/bench/bench_capture.py: storing 5,000 rankings of 100 took 0.9 s after the
last answer; staged, 0.1 s).

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
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from django.db import connection, transaction

from judgments import services as core
from judgments.models import Run, SearchConfiguration
from judgments.signals import run_submitted

BATCH = 250  # rankings staged at a time: few statements, and the last batch is small work at the end
MAX_PROBLEMS = 50
_ids = itertools.count(1)


class RunWriter:
    """A run of `configuration` staged ranking by ranking (see the module doc); `query_pks` maps the
    pool's query ids to keys."""

    def __init__(self, configuration: SearchConfiguration, query_pks: Mapping[str, int]):
        self.configuration = configuration
        self.pool_id = configuration.pool_id
        self.query_pks = query_pks
        self.table = f"jl_capture_stage_{next(_ids)}"
        self.doc_pks: dict[str, int] = {}  # every document id seen: its key, or a negative placeholder
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
        """Stage the pending rankings (a ranking with a problem is noted, and not staged)."""
        if not self.pending:
            return
        rankings, self.pending = self.pending, {}
        bad = set()
        if len(self.problems) < MAX_PROBLEMS:
            found = core.validate_rankings(rankings)
            self.problems += found
            bad = {qid for qid, _ in found}
        unknown_queries = [q for q in rankings if q not in self.query_pks]
        self.problems += [(q, "unknown query") for q in unknown_queries[:MAX_PROBLEMS]]
        bad.update(unknown_queries)
        if self.problems:
            return  # the run will not be stored: checking the rest is enough
        self._look_up({doc for docs in rankings.values() for doc in docs})
        keys = self.doc_pks
        lines = []
        for qid, docs in rankings.items():
            pks = [keys[doc] for doc in docs]
            lines.append(
                f"{self.query_pks[qid]}\t{{{','.join(map(str, pks))}}}\t{'t' if min(pks) < 0 else 'f'}\n"
            )
        with connection.cursor() as cursor:
            if not self.created:
                cursor.execute(
                    f"CREATE TEMP TABLE {self.table} (query_id bigint, doc_ids bigint[], unknown boolean)"
                )
                self.created = True
            with cursor.copy(f"COPY {self.table} (query_id, doc_ids, unknown) FROM STDIN") as copy:
                copy.write("".join(lines))
        self.staged += len(lines)

    def _look_up(self, docs: set[str]) -> None:
        """Keys of the documents not seen yet; those not in the pool get placeholders."""
        missing = [doc for doc in docs if doc not in self.doc_pks]
        if not missing:
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT external_id, id FROM judgments_document WHERE pool_id = %s AND external_id = ANY(%s)",
                [self.pool_id, missing],
            )
            self.doc_pks.update(cursor.fetchall())
        for doc in missing:
            if doc not in self.doc_pks:
                self.unknown.append(doc)
                self.doc_pks[doc] = -len(self.unknown)

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
        known = [pk for pk in self.doc_pks.values() if pk > 0]
        with connection.cursor() as cursor:
            # A document deleted since it was looked up would leave a key that names nothing.
            cursor.execute("SELECT count(*) FROM judgments_document WHERE id = ANY(%s)", [known])
            if cursor.fetchone()[0] != len(known):
                raise core.RunError(
                    "Documents of the pool were deleted during the capture; nothing was stored."
                )
        new = core.ensure_documents(self.configuration.pool, self.unknown) if self.unknown else {}
        run = Run.objects.create(
            configuration=self.configuration,
            source=source,
            submitted_by=submitted_by,
            tag=tag[:200],
            endpoint=endpoint,
        )
        with connection.cursor() as cursor:
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
        run_submitted.send(sender=Run, run=run)  # inside the transaction (see judgments.signals)
        return run

    def close(self) -> None:
        """Drop the staging table (it would go with the session anyway; a worker's session lives on)."""
        self.pending = {}
        if self.created:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {self.table}")
            self.created = False
