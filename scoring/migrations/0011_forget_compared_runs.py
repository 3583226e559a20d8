"""Stored comparisons go with their runs when runs are deleted in SQL (judgments.services.delete_pool_in_bulk,
a benchmark's clean-up), as the score rows do (migrations 0002 and 0005): the ORM's cascade only covers
deletes through Django."""

from django.db import migrations

CREATE = """
CREATE FUNCTION scoring_forget_compared_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM scoring_storedcomparison s USING old_runs o WHERE s.run_a_id = o.id OR s.run_b_id = o.id;
    RETURN NULL;
END $$;
CREATE TRIGGER scoring_forget_compared_runs AFTER DELETE ON judgments_run
    REFERENCING OLD TABLE AS old_runs FOR EACH STATEMENT EXECUTE FUNCTION scoring_forget_compared_runs();
"""
DROP = """
DROP TRIGGER scoring_forget_compared_runs ON judgments_run;
DROP FUNCTION scoring_forget_compared_runs();
"""


class Migration(migrations.Migration):
    dependencies = [("scoring", "0010_queue_comparison_store")]

    operations = [migrations.RunSQL(CREATE, DROP)]
