import django.db.models.deletion
from django.db import migrations, models

# Documents stored before the field existed: one without content, in no pair, that the rankings of
# exactly one configuration name was brought in by that configuration's runs (the only way such a
# document is made). One pass over the rankings, once.
BACKFILL = """
UPDATE judgments_document d SET introduced_by_id = x.configuration_id
FROM (
    SELECT u.doc, min(r.configuration_id) AS configuration_id
    FROM judgments_ranking k
    JOIN judgments_run r ON r.id = k.run_id
    CROSS JOIN LATERAL unnest(k.doc_ids) AS u(doc)
    GROUP BY u.doc
    HAVING count(DISTINCT r.configuration_id) = 1
) x
WHERE d.id = x.doc AND d.title = '' AND d.body = ''
  AND NOT EXISTS (SELECT 1 FROM judgments_pair p WHERE p.document_id = d.id)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0012_redundant_indexes_and_bulk_history"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="introduced_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="judgments.searchconfiguration",
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
