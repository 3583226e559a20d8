"""The distractor grade (-1, issue 13): a pool setting, grades widened to -1..4, and triggers that refuse a
-1 in a pool that does not enable it (whatever writes it: ORM, COPY, SQL) and refuse turning the setting
off while a judgment or a final grade of the pool uses it. The triggers fire only for negative grades
(their WHEN clause), so ordinary grades and bulk imports pay nothing."""

from django.conf import settings
from django.db import migrations, models

TRIGGERS = """
CREATE FUNCTION judgments_refuse_distractor() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_pool record;
BEGIN
    IF TG_TABLE_NAME = 'judgments_judgment' THEN
        SELECT p.name, p.distractors_enabled INTO found_pool FROM judgments_pair pr
        JOIN judgments_pool p ON p.id = pr.pool_id WHERE pr.id = NEW.pair_id;
    ELSE
        SELECT p.name, p.distractors_enabled INTO found_pool FROM judgments_pool p WHERE p.id = NEW.pool_id;
    END IF;
    IF found_pool.name IS NOT NULL AND NOT found_pool.distractors_enabled THEN
        RAISE EXCEPTION 'Grade -1 (distractor) is not enabled for pool %', found_pool.name
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER judgments_judgment_distractor BEFORE INSERT OR UPDATE OF grade, pair_id ON judgments_judgment
    FOR EACH ROW WHEN (NEW.grade < 0) EXECUTE FUNCTION judgments_refuse_distractor();
CREATE TRIGGER judgments_pair_distractor BEFORE INSERT OR UPDATE OF final_grade, pool_id ON judgments_pair
    FOR EACH ROW WHEN (NEW.final_grade < 0) EXECUTE FUNCTION judgments_refuse_distractor();

CREATE FUNCTION judgments_keep_distractors() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM judgments_pair pr WHERE pr.pool_id = NEW.id AND pr.final_grade < 0)
       OR EXISTS (SELECT 1 FROM judgments_judgment j JOIN judgments_pair pr ON pr.id = j.pair_id
                  WHERE pr.pool_id = NEW.id AND j.grade < 0) THEN
        RAISE EXCEPTION 'Pool % has distractor grades (-1): change them before turning the distractor grade off', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER judgments_pool_keep_distractors BEFORE UPDATE OF distractors_enabled ON judgments_pool
    FOR EACH ROW WHEN (OLD.distractors_enabled AND NOT NEW.distractors_enabled)
    EXECUTE FUNCTION judgments_keep_distractors();
"""

DROP_TRIGGERS = """
DROP TRIGGER judgments_pool_keep_distractors ON judgments_pool;
DROP FUNCTION judgments_keep_distractors();
DROP TRIGGER judgments_pair_distractor ON judgments_pair;
DROP TRIGGER judgments_judgment_distractor ON judgments_judgment;
DROP FUNCTION judgments_refuse_distractor();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0008_model_judges"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="judgment",
            name="grade_between_0_and_4",
        ),
        migrations.RemoveConstraint(
            model_name="pair",
            name="pair_final_grade_at_most_4",
        ),
        migrations.AddField(
            model_name="pool",
            name="distractors_enabled",
            field=models.BooleanField(
                default=False,
                help_text="Raters and model judges may grade a document -1, a distractor: it looks relevant but misleads. UDCG counts it as harmful; NDCG and trec_eval count it as unjudged. Cannot be turned off while a judgment or final grade uses it.",
                verbose_name="distractor grade",
            ),
        ),
        migrations.AlterField(
            model_name="judgment",
            name="grade",
            field=models.SmallIntegerField(
                blank=True,
                choices=[
                    (-1, "Distractor"),
                    (0, "Not relevant"),
                    (1, "Marginal"),
                    (2, "Relevant"),
                    (3, "Highly relevant"),
                    (4, "Perfect"),
                ],
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="final_grade",
            field=models.SmallIntegerField(
                blank=True,
                choices=[
                    (-1, "Distractor"),
                    (0, "Not relevant"),
                    (1, "Marginal"),
                    (2, "Relevant"),
                    (3, "Highly relevant"),
                    (4, "Perfect"),
                ],
                null=True,
            ),
        ),
        migrations.AddConstraint(
            model_name="judgment",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("grade__gte", -1), ("grade__lte", 4)), ("grade__isnull", True), _connector="OR"
                ),
                name="grade_between_minus_1_and_4",
            ),
        ),
        migrations.AddConstraint(
            model_name="pair",
            constraint=models.CheckConstraint(
                condition=models.Q(("final_grade__gte", -1), ("final_grade__lte", 4)),
                name="pair_final_grade_between_minus_1_and_4",
            ),
        ),
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
    ]
