"""Log every insert, change and delete of a judgment in judgments_judgmentchange, in the database.

A trigger rather than save(): bulk updates, the admin, imports and raw SQL all leave their trace.
Who made the change comes from the transaction-local setting `judgments.actor` (services set it with
set_config(..., true)); without it, the rater is recorded.
"""

from django.db import migrations

FORWARD = r"""
CREATE OR REPLACE FUNCTION jl_log_judgment_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    actor bigint := NULLIF(current_setting('judgments.actor', true), '')::bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO judgments_judgmentchange (judgment_id_ref, pair_id, rater_id, changed_by_id, changed_at, action,
            old_grade, new_grade, old_cant_judge, new_cant_judge, old_note, new_note)
        VALUES (NEW.id, NEW.pair_id, NEW.rater_id, COALESCE(actor, NEW.rater_id), clock_timestamp(), 'created',
            NULL, NEW.grade, NULL, NEW.cant_judge, '', NEW.note);
        RETURN NEW;
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.grade IS NOT DISTINCT FROM NEW.grade AND OLD.cant_judge = NEW.cant_judge
           AND OLD.cant_judge_reason = NEW.cant_judge_reason AND OLD.note = NEW.note
           AND OLD.pair_id = NEW.pair_id AND OLD.rater_id = NEW.rater_id THEN
            RETURN NEW;
        END IF;
        INSERT INTO judgments_judgmentchange (judgment_id_ref, pair_id, rater_id, changed_by_id, changed_at, action,
            old_grade, new_grade, old_cant_judge, new_cant_judge, old_note, new_note)
        VALUES (NEW.id, NEW.pair_id, NEW.rater_id, COALESCE(actor, NEW.rater_id), clock_timestamp(), 'changed',
            OLD.grade, NEW.grade, OLD.cant_judge, NEW.cant_judge, OLD.note, NEW.note);
        RETURN NEW;
    ELSE
        INSERT INTO judgments_judgmentchange (judgment_id_ref, pair_id, rater_id, changed_by_id, changed_at, action,
            old_grade, new_grade, old_cant_judge, new_cant_judge, old_note, new_note)
        VALUES (OLD.id, OLD.pair_id, OLD.rater_id, actor, clock_timestamp(), 'deleted',
            OLD.grade, NULL, OLD.cant_judge, NULL, OLD.note, '');
        RETURN OLD;
    END IF;
END $$;

CREATE TRIGGER jl_judgment_history
AFTER INSERT OR UPDATE OR DELETE ON judgments_judgment
FOR EACH ROW EXECUTE FUNCTION jl_log_judgment_change();

-- When a pair itself goes (its pool or document was deleted), its history goes with it; otherwise the
-- 'deleted' rows logged for its judgments would point at a missing pair.
CREATE OR REPLACE FUNCTION jl_drop_pair_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM judgments_judgmentchange WHERE pair_id = OLD.id;
    RETURN OLD;
END $$;

CREATE TRIGGER jl_pair_history_cleanup
AFTER DELETE ON judgments_pair
FOR EACH ROW EXECUTE FUNCTION jl_drop_pair_history();
"""

BACKWARD = r"""
DROP TRIGGER IF EXISTS jl_pair_history_cleanup ON judgments_pair;
DROP FUNCTION IF EXISTS jl_drop_pair_history();
DROP TRIGGER IF EXISTS jl_judgment_history ON judgments_judgment;
DROP FUNCTION IF EXISTS jl_log_judgment_change();
"""


class Migration(migrations.Migration):
    dependencies = [("judgments", "0001_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
