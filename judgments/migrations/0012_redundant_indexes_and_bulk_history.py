"""Bulk imports at database speed (issue 15).

1. Indexes that only repeated the first column of another index are gone: the foreign-key indexes
   Django adds by default on document.pool, query.pool, pair.pool, pair.query, judgment.pair,
   judgment.rater, ranking.run and ranking.query (a composite index starting with the same column
   serves every lookup and cascade they served); pair.held_by and pair.final_by, NULL for nearly
   every pair, get partial indexes of the rows that hold a user. A 1,000,000-line qrels import wrote
   7 index entries a line fewer.
2. The judgment history triggers (migration 0004) fire ALWAYS, also in a session with
   session_replication_role = replica: the bulk imports switch PostgreSQL's per-row foreign-key
   triggers off that way (judgments.bulk), and every judgment they write must still be logged.
   (A logical-replication subscriber of both the judgment and the history table would log the
   replicated judgments a second time: replicate the judgment table only.)
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

EVENTS = ("insert", "update", "delete")


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0011_queue_index_and_upload_parts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(
            [
                f"ALTER TABLE judgments_judgment ENABLE ALWAYS TRIGGER jl_judgment_history_{event}"
                for event in EVENTS
            ],
            [
                f"ALTER TABLE judgments_judgment ENABLE TRIGGER jl_judgment_history_{event}"
                for event in EVENTS
            ],
        ),
        # The distractor checks (migration 0009) hold in a bulk import's session too.
        migrations.RunSQL(
            [
                "ALTER TABLE judgments_judgment ENABLE ALWAYS TRIGGER judgments_judgment_distractor",
                "ALTER TABLE judgments_pair ENABLE ALWAYS TRIGGER judgments_pair_distractor",
            ],
            [
                "ALTER TABLE judgments_judgment ENABLE TRIGGER judgments_judgment_distractor",
                "ALTER TABLE judgments_pair ENABLE TRIGGER judgments_pair_distractor",
            ],
        ),
        migrations.AlterField(
            model_name="document",
            name="pool",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="documents",
                to="judgments.pool",
            ),
        ),
        migrations.AlterField(
            model_name="judgment",
            name="pair",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judgments",
                to="judgments.pair",
            ),
        ),
        migrations.AlterField(
            model_name="judgment",
            name="rater",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="judgments",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="final_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="held_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="pool",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="pairs",
                to="judgments.pool",
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="query",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="pairs",
                to="judgments.query",
            ),
        ),
        migrations.AlterField(
            model_name="query",
            name="pool",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="queries",
                to="judgments.pool",
            ),
        ),
        migrations.AlterField(
            model_name="ranking",
            name="query",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="rankings",
                to="judgments.query",
            ),
        ),
        migrations.AlterField(
            model_name="ranking",
            name="run",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="rankings",
                to="judgments.run",
            ),
        ),
        migrations.AddIndex(
            model_name="pair",
            index=models.Index(
                condition=models.Q(("held_by__isnull", False)), fields=["held_by"], name="pair_held_by_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="pair",
            index=models.Index(
                condition=models.Q(("final_by__isnull", False)), fields=["final_by"], name="pair_final_by_idx"
            ),
        ),
    ]
