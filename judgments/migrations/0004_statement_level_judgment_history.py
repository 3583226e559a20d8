"""The judgment history written once per statement instead of once per row.

Migration 0002 logged every judgment change with a row-level PL/pgSQL trigger: one INSERT into
judgments_judgmentchange per judgment written, 21 of the 110 s of a 1.2M-judgment qrels import
(`tests/bench/run.py bench_scoring`). Three statement-level triggers (one per event: PostgreSQL allows
transition tables only on single-event triggers) now write the same rows with one INSERT ... SELECT
over the statement's transition tables: what the statement inserted, changed or deleted.

The rows are those 0002 wrote: 'created' for each inserted judgment, 'changed' for each updated one
whose grade, can't-judge flag or reason, note, pair or rater differs (an update that leaves them all
equal logs nothing), 'deleted' for each deleted one; changed_by from the transaction-local setting
`judgments.actor`, else the rater (no one for a delete); changed_at the clock time of the row written.
An INSERT ... ON CONFLICT DO UPDATE fires both: the insert trigger sees the rows it inserted, the
update trigger the rows it changed. Old and new versions of an updated row are matched by id (no
writer changes a judgment's id). Within one statement, rows are logged in order of judgment id.
"""

import importlib

from django.db import migrations


def _log_function(name: str, select: str) -> str:
    """A statement-level trigger function inserting the history rows `select` gives (`actor`: the
    transaction's actor, or NULL)."""
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    actor bigint := NULLIF(current_setting('judgments.actor', true), '')::bigint;
BEGIN
    INSERT INTO judgments_judgmentchange (judgment_id_ref, pair_id, rater_id, changed_by_id, changed_at,
        action, old_grade, new_grade, old_cant_judge, new_cant_judge, old_note, new_note)
    {select};
    RETURN NULL;
END $$;
"""


FORWARD = (
    """
DROP TRIGGER IF EXISTS jl_judgment_history ON judgments_judgment;
DROP FUNCTION IF EXISTS jl_log_judgment_change();
"""
    + _log_function(
        "jl_log_judgment_inserts",
        """SELECT n.id, n.pair_id, n.rater_id, COALESCE(actor, n.rater_id), clock_timestamp(), 'created',
        NULL, n.grade, NULL, n.cant_judge, '', n.note
    FROM jl_new n ORDER BY n.id""",
    )
    + _log_function(
        "jl_log_judgment_updates",
        """SELECT n.id, n.pair_id, n.rater_id, COALESCE(actor, n.rater_id), clock_timestamp(), 'changed',
        o.grade, n.grade, o.cant_judge, n.cant_judge, o.note, n.note
    FROM jl_new n JOIN jl_old o ON o.id = n.id
    WHERE o.grade IS DISTINCT FROM n.grade OR o.cant_judge <> n.cant_judge
       OR o.cant_judge_reason <> n.cant_judge_reason OR o.note <> n.note
       OR o.pair_id <> n.pair_id OR o.rater_id <> n.rater_id
    ORDER BY n.id""",
    )
    + _log_function(
        "jl_log_judgment_deletes",
        """SELECT o.id, o.pair_id, o.rater_id, actor, clock_timestamp(), 'deleted',
        o.grade, NULL, o.cant_judge, NULL, o.note, ''
    FROM jl_old o ORDER BY o.id""",
    )
    + """
CREATE TRIGGER jl_judgment_history_insert AFTER INSERT ON judgments_judgment
REFERENCING NEW TABLE AS jl_new FOR EACH STATEMENT EXECUTE FUNCTION jl_log_judgment_inserts();

CREATE TRIGGER jl_judgment_history_update AFTER UPDATE ON judgments_judgment
REFERENCING OLD TABLE AS jl_old NEW TABLE AS jl_new FOR EACH STATEMENT EXECUTE FUNCTION jl_log_judgment_updates();

CREATE TRIGGER jl_judgment_history_delete AFTER DELETE ON judgments_judgment
REFERENCING OLD TABLE AS jl_old FOR EACH STATEMENT EXECUTE FUNCTION jl_log_judgment_deletes();
"""
)


def _row_level_trigger() -> str:
    """Migration 0002's row-level function and trigger (not its pair-history cleanup, which stays)."""
    forward = importlib.import_module("judgments.migrations.0002_judgment_history_trigger").FORWARD
    return forward.split("-- When a pair itself goes")[0]


BACKWARD = """
DROP TRIGGER IF EXISTS jl_judgment_history_insert ON judgments_judgment;
DROP TRIGGER IF EXISTS jl_judgment_history_update ON judgments_judgment;
DROP TRIGGER IF EXISTS jl_judgment_history_delete ON judgments_judgment;
DROP FUNCTION IF EXISTS jl_log_judgment_inserts();
DROP FUNCTION IF EXISTS jl_log_judgment_updates();
DROP FUNCTION IF EXISTS jl_log_judgment_deletes();
""" + _row_level_trigger()


class Migration(migrations.Migration):
    dependencies = [("judgments", "0003_ranking_check_in_c")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
