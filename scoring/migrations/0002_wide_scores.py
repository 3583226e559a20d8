"""Scores move from one row per (run, query, flavour) to one wide row per (run, query) (CellScore);
scoring_queryscore becomes a view that shows the wide rows per flavour, so that every reader keeps
working unchanged. Stored scores are copied over. Written by hand around makemigrations' CreateModel.
"""

import django.db.models.deletion
from django.db import migrations, models

FLAVOURS = [("exp", "zero"), ("trec", "zero"), ("jk", "zero"), ("judged", "drop")]
CUTOFFS = ("3", "5", "10", "100")
NDCG = [f"ndcg_{k}" for k in CUTOFFS]
MODE = [f"p_{k}" for k in CUTOFFS] + [f"recall_{k}" for k in CUTOFFS] + ["mrr", "ap"]
JUDGED = [f"judged_{k}" for k in CUTOFFS]
LOCK_KEY = 0x5C0_4E  # scoring.services._LOCK_KEY: the pool's scoring lock


def _branch(position, flavour, unjudged):
    prefix = "c_" if unjudged == "drop" else ""
    columns = (
        [f"s.{flavour}_{c} AS {c}" for c in NDCG]
        + [f"s.{prefix}{c} AS {c}" for c in MODE]
        + [f"s.{c}" for c in JUDGED]
    )
    return (
        f"SELECT s.id * {len(FLAVOURS)} + {position} AS id, s.run_id, s.query_id, "
        f"'{flavour}'::varchar(10) AS flavor, s.has_ranking, s.has_relevant, {', '.join(columns)}, "
        "s.updated_at FROM scoring_cellscore s"
    )


CREATE_VIEW = "CREATE VIEW scoring_queryscore AS " + " UNION ALL ".join(
    _branch(position, flavour, unjudged) for position, (flavour, unjudged) in enumerate(FLAVOURS)
)


def _pick(column, flavour):
    return f"max({column}) FILTER (WHERE flavor = '{flavour}')"


_TARGETS = (
    [f"{flavour}_{c}" for flavour, _ in FLAVOURS for c in NDCG] + MODE + [f"c_{c}" for c in MODE] + JUDGED
)
_SOURCES = (
    [_pick(c, flavour) for flavour, _ in FLAVOURS for c in NDCG]
    + [_pick(c, "trec") for c in MODE]
    + [_pick(c, "judged") for c in MODE]
    + [_pick(c, "trec") for c in JUDGED]
)
# Cells stored in every flavour are copied; any other cell is left for the next recompute.
COPY_SCORES = f"""
    INSERT INTO scoring_cellscore (run_id, query_id, has_ranking, has_relevant, {", ".join(_TARGETS)}, updated_at)
    SELECT run_id, query_id, bool_and(has_ranking), bool_and(has_relevant), {", ".join(_SOURCES)}, max(updated_at)
    FROM scoring_queryscore_old
    GROUP BY run_id, query_id
    HAVING count(DISTINCT flavor) FILTER (WHERE flavor IN ('exp', 'trec', 'jk', 'judged')) = 4
"""

# Runs and queries deleted by any means (not only Django's CASCADE) take their scores with them. The
# pool's scoring lock first: a recompute writing the pool's rows concurrently finishes before.
TRIGGERS = f"""
CREATE FUNCTION scoring_forget_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({LOCK_KEY}, p.pool_id::int4) FROM (
        SELECT DISTINCT c.pool_id FROM old_runs o
        JOIN judgments_searchconfiguration c ON c.id = o.configuration_id ORDER BY 1) p;
    DELETE FROM scoring_cellscore s USING old_runs o WHERE s.run_id = o.id;
    RETURN NULL;
END $$;
CREATE TRIGGER scoring_forget_runs AFTER DELETE ON judgments_run
    REFERENCING OLD TABLE AS old_runs FOR EACH STATEMENT EXECUTE FUNCTION scoring_forget_runs();
CREATE FUNCTION scoring_forget_queries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({LOCK_KEY}, p.pool_id::int4) FROM (
        SELECT DISTINCT pool_id FROM old_queries ORDER BY 1) p;
    DELETE FROM scoring_cellscore s USING old_queries o WHERE s.query_id = o.id;
    RETURN NULL;
END $$;
CREATE TRIGGER scoring_forget_queries AFTER DELETE ON judgments_query
    REFERENCING OLD TABLE AS old_queries FOR EACH STATEMENT EXECUTE FUNCTION scoring_forget_queries();
"""

QUERY_SCORE_FIELDS = [
    ("id", models.BigIntegerField(primary_key=True, serialize=False)),
    (
        "flavor",
        models.CharField(
            choices=[
                ("exp", "exp: gain 2^g−1, discount log2(i+1), unjudged = 0"),
                ("trec", "trec: gain g, discount log2(i+1), unjudged = 0 (trec_eval -c)"),
                ("jk", "jk: gain g, Järvelin–Kekäläinen discount, unjudged = 0"),
                ("judged", "judged: gain g, discount log2(i+1), unjudged removed (trec_eval -c -J)"),
            ],
            max_length=10,
        ),
    ),
    (
        "has_ranking",
        models.BooleanField(help_text="False: the run has no ranking for this query; it scores 0"),
    ),
    ("has_relevant", models.BooleanField(help_text="False: no judged document of this query is relevant")),
    *((c, models.FloatField()) for c in NDCG + MODE + JUDGED),
    ("updated_at", models.DateTimeField()),
    (
        "query",
        models.ForeignKey(
            db_constraint=False,
            on_delete=django.db.models.deletion.DO_NOTHING,
            related_name="scores",
            to="judgments.query",
        ),
    ),
    (
        "run",
        models.ForeignKey(
            db_constraint=False,
            on_delete=django.db.models.deletion.DO_NOTHING,
            related_name="scores",
            to="judgments.run",
        ),
    ),
]


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0002_judgment_history_trigger"),
        ("scoring", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="CellScore",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "has_ranking",
                    models.BooleanField(
                        help_text="False: the run has no ranking for this query; it scores 0"
                    ),
                ),
                (
                    "has_relevant",
                    models.BooleanField(help_text="False: no judged document of this query is relevant"),
                ),
                ("judged_3", models.FloatField()),
                ("judged_5", models.FloatField()),
                ("judged_10", models.FloatField()),
                ("judged_100", models.FloatField()),
                ("p_3", models.FloatField()),
                ("p_5", models.FloatField()),
                ("p_10", models.FloatField()),
                ("p_100", models.FloatField()),
                ("recall_3", models.FloatField()),
                ("recall_5", models.FloatField()),
                ("recall_10", models.FloatField()),
                ("recall_100", models.FloatField()),
                ("mrr", models.FloatField()),
                ("ap", models.FloatField()),
                ("c_p_3", models.FloatField()),
                ("c_p_5", models.FloatField()),
                ("c_p_10", models.FloatField()),
                ("c_p_100", models.FloatField()),
                ("c_recall_3", models.FloatField()),
                ("c_recall_5", models.FloatField()),
                ("c_recall_10", models.FloatField()),
                ("c_recall_100", models.FloatField()),
                ("c_mrr", models.FloatField()),
                ("c_ap", models.FloatField()),
                ("exp_ndcg_3", models.FloatField()),
                ("exp_ndcg_5", models.FloatField()),
                ("exp_ndcg_10", models.FloatField()),
                ("exp_ndcg_100", models.FloatField()),
                ("trec_ndcg_3", models.FloatField()),
                ("trec_ndcg_5", models.FloatField()),
                ("trec_ndcg_10", models.FloatField()),
                ("trec_ndcg_100", models.FloatField()),
                ("jk_ndcg_3", models.FloatField()),
                ("jk_ndcg_5", models.FloatField()),
                ("jk_ndcg_10", models.FloatField()),
                ("jk_ndcg_100", models.FloatField()),
                ("judged_ndcg_3", models.FloatField()),
                ("judged_ndcg_5", models.FloatField()),
                ("judged_ndcg_10", models.FloatField()),
                ("judged_ndcg_100", models.FloatField()),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "query",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgments.query",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="judgments.run",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("run", "query"), name="one_score_per_run_query")
                ],
            },
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL("ALTER TABLE scoring_queryscore RENAME TO scoring_queryscore_old"),
                migrations.RunSQL(COPY_SCORES),
                migrations.RunSQL("DROP TABLE scoring_queryscore_old"),
                migrations.RunSQL(CREATE_VIEW),
                migrations.RunSQL(TRIGGERS),
            ],
            state_operations=[
                migrations.DeleteModel(name="QueryScore"),
                migrations.CreateModel(
                    name="QueryScore",
                    fields=QUERY_SCORE_FIELDS,
                    options={"managed": False, "db_table": "scoring_queryscore"},
                ),
            ],
        ),
    ]
