"""Stored counts for the queue and the pages: `Pair.human_grades` and the insert-only `Tally` rows.

Statement-level triggers (one per event, as 0004's history: PostgreSQL allows transition tables only on
single-event triggers) keep them in the transaction of every write, so every path is covered: the
queue's upsert, imports by COPY, exclusions (an update of `excluded`), adjudication (`final_grade`),
queue builds (`queued_at`), deletions, document content arriving, a user made a model judge.

A pair is *queued* when `queued_at` is set, *complete* when queued with a final grade or at least the
pool's `raters_per_pair` human grades, *open* when queued, not complete, and its document has content.
Pool rows (rater_id NULL) carry pairs / queued / complete / open_pairs / documents deltas; rater rows carry
graded / cant (the rater's judgments in the pool) and judged_open (open pairs the rater judged), so a
rater's pairs still to do are open_pairs - judged_open. Judgment triggers count the rater's new judgment
as judged_open when its pair was open before this statement, then change the pair's human_grades; the
pair trigger then moves every judging rater's judged_open with the pair's open state.

`jl_tally_rebuild(pool)` recounts one pool from its rows (the fill below, `judgments.tallies.rebuild`,
and a change of `raters_per_pair`); the fill computes human_grades before the triggers exist, in one
statement.
"""

from django.db import migrations, models

HUMAN = (
    "NOT {x}.cant_judge AND NOT {x}.excluded"
    " AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = {x}.rater_id)"
)


def human(x: str) -> str:
    """The judgment row `x` fills its pair."""
    return HUMAN.format(x=x)


def complete(x: str) -> str:
    """Pair row `x` (pool row `pl`) is queued and complete."""
    return f"({x}.queued_at IS NOT NULL AND ({x}.final_grade IS NOT NULL OR {x}.human_grades >= pl.raters_per_pair))"


def unfilled(x: str) -> str:
    """Pair row `x` (pool row `pl`) is queued and not complete: open if its document has content."""
    return (
        f"({x}.queued_at IS NOT NULL AND {x}.final_grade IS NULL AND {x}.human_grades < pl.raters_per_pair)"
    )


def content(x: str) -> str:
    """Pair row `x`'s document has content (the anti-join on the partial index document_without_content)."""
    return (
        f"NOT EXISTS (SELECT 1 FROM judgments_document e WHERE e.pool_id = {x}.pool_id"
        f" AND e.id = {x}.document_id AND e.title = '' AND e.body = '')"
    )


def _function(name: str, body: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{body}
    RETURN NULL;
END $$;
"""


JUDGMENT_INSERTS = f"""
    INSERT INTO judgments_tally (pool_id, rater_id, graded, cant, judged_open)
    SELECT p.pool_id, n.rater_id, count(*) FILTER (WHERE NOT n.cant_judge), count(*) FILTER (WHERE n.cant_judge),
           count(*) FILTER (WHERE {unfilled("p")} AND {content("p")})
    FROM jt_new n JOIN judgments_pair p ON p.id = n.pair_id JOIN judgments_pool pl ON pl.id = p.pool_id
    GROUP BY p.pool_id, n.rater_id;
    UPDATE judgments_pair p SET human_grades = p.human_grades + d.n
    FROM (SELECT n.pair_id, count(*) AS n FROM jt_new n WHERE {human("n")} GROUP BY n.pair_id) d
    WHERE p.id = d.pair_id;
"""

JUDGMENT_UPDATES = f"""
    INSERT INTO judgments_tally (pool_id, rater_id, graded, cant)
    SELECT p.pool_id, d.rater_id, sum(d.g), sum(d.c)
    FROM (SELECT n.pair_id, n.rater_id, (NOT n.cant_judge)::int AS g, n.cant_judge::int AS c FROM jt_new n
          UNION ALL
          SELECT o.pair_id, o.rater_id, -((NOT o.cant_judge)::int), -(o.cant_judge::int) FROM jt_old o) d
    JOIN judgments_pair p ON p.id = d.pair_id
    GROUP BY p.pool_id, d.rater_id HAVING sum(d.g) <> 0 OR sum(d.c) <> 0;
    UPDATE judgments_pair p SET human_grades = p.human_grades + d.n
    FROM (SELECT x.pair_id, sum(x.n) AS n
          FROM (SELECT n.pair_id, 1 AS n FROM jt_new n WHERE {human("n")}
                UNION ALL
                SELECT o.pair_id, -1 FROM jt_old o WHERE {human("o")}) x
          GROUP BY x.pair_id HAVING sum(x.n) <> 0) d
    WHERE p.id = d.pair_id;
"""

JUDGMENT_DELETES = f"""
    INSERT INTO judgments_tally (pool_id, rater_id, graded, cant, judged_open)
    SELECT p.pool_id, o.rater_id, -count(*) FILTER (WHERE NOT o.cant_judge), -count(*) FILTER (WHERE o.cant_judge),
           -count(*) FILTER (WHERE {unfilled("p")} AND {content("p")})
    FROM jt_old o JOIN judgments_pair p ON p.id = o.pair_id JOIN judgments_pool pl ON pl.id = p.pool_id
    GROUP BY p.pool_id, o.rater_id;
    UPDATE judgments_pair p SET human_grades = p.human_grades - d.n
    FROM (SELECT o.pair_id, count(*) AS n FROM jt_old o WHERE {human("o")} GROUP BY o.pair_id) d
    WHERE p.id = d.pair_id;
"""

PAIR_INSERTS = f"""
    INSERT INTO judgments_tally (pool_id, pairs, queued, complete, open_pairs)
    SELECT n.pool_id, count(*), count(*) FILTER (WHERE n.queued_at IS NOT NULL), count(*) FILTER (WHERE {complete("n")}),
           count(*) FILTER (WHERE {unfilled("n")} AND {content("n")})
    FROM jt_new n JOIN judgments_pool pl ON pl.id = n.pool_id
    GROUP BY n.pool_id;
"""

# Most updates of pairs are holds (held_by, held_until): the WHERE keeps them out before any other work.
PAIR_UPDATES = f"""
    WITH changed AS (
        SELECT n.id, n.pool_id, n.document_id,
               (n.queued_at IS NOT NULL)::int - (o.queued_at IS NOT NULL)::int AS dq,
               {complete("n")}::int - {complete("o")}::int AS dc,
               {unfilled("n")}::int - {unfilled("o")}::int AS du
        FROM jt_new n JOIN jt_old o ON o.id = n.id JOIN judgments_pool pl ON pl.id = n.pool_id
        WHERE (n.queued_at IS NULL) <> (o.queued_at IS NULL) OR n.final_grade IS DISTINCT FROM o.final_grade
           OR n.human_grades <> o.human_grades
    ),
    d AS (
        SELECT c.id, c.pool_id, c.dq, c.dc, CASE WHEN c.du <> 0 AND {content("c")} THEN c.du ELSE 0 END AS dopen
        FROM changed c WHERE c.dq <> 0 OR c.dc <> 0 OR c.du <> 0
    ),
    pool_rows AS (
        INSERT INTO judgments_tally (pool_id, queued, complete, open_pairs)
        SELECT d.pool_id, sum(d.dq), sum(d.dc), sum(d.dopen) FROM d GROUP BY d.pool_id
    )
    INSERT INTO judgments_tally (pool_id, rater_id, judged_open)
    SELECT d.pool_id, j.rater_id, sum(d.dopen)
    FROM d JOIN judgments_judgment j ON j.pair_id = d.id
    WHERE d.dopen <> 0 GROUP BY d.pool_id, j.rater_id;
"""

PAIR_DELETES = f"""
    INSERT INTO judgments_tally (pool_id, pairs, queued, complete, open_pairs)
    SELECT o.pool_id, -count(*), -count(*) FILTER (WHERE o.queued_at IS NOT NULL),
           -count(*) FILTER (WHERE {complete("o")}), -count(*) FILTER (WHERE {unfilled("o")} AND {content("o")})
    FROM jt_old o JOIN judgments_pool pl ON pl.id = o.pool_id
    GROUP BY o.pool_id;
"""

DOCUMENT_INSERTS = """
    INSERT INTO judgments_tally (pool_id, documents) SELECT n.pool_id, count(*) FROM jt_new n GROUP BY n.pool_id;
"""

DOCUMENT_DELETES = """
    INSERT INTO judgments_tally (pool_id, documents) SELECT o.pool_id, -count(*) FROM jt_old o GROUP BY o.pool_id;
"""

DOCUMENT_UPDATES = f"""
    WITH flipped AS (
        SELECT n.id, CASE WHEN n.title = '' AND n.body = '' THEN -1 ELSE 1 END AS s
        FROM jt_new n JOIN jt_old o ON o.id = n.id
        WHERE (n.title = '' AND n.body = '') <> (o.title = '' AND o.body = '')
    ),
    d AS (
        SELECT p.id, p.pool_id, f.s
        FROM flipped f JOIN judgments_pair p ON p.document_id = f.id JOIN judgments_pool pl ON pl.id = p.pool_id
        WHERE {unfilled("p")}
    ),
    pool_rows AS (
        INSERT INTO judgments_tally (pool_id, open_pairs) SELECT d.pool_id, sum(d.s) FROM d GROUP BY d.pool_id
    )
    INSERT INTO judgments_tally (pool_id, rater_id, judged_open)
    SELECT d.pool_id, j.rater_id, sum(d.s) FROM d JOIN judgments_judgment j ON j.pair_id = d.id
    GROUP BY d.pool_id, j.rater_id;
"""

POOL_UPDATES = """
    PERFORM jl_tally_rebuild(n.id) FROM jt_new n JOIN jt_old o ON o.id = n.id
    WHERE n.raters_per_pair <> o.raters_per_pair;
"""

POOL_DELETES = """
    DELETE FROM judgments_tally t USING jt_old o WHERE t.pool_id = o.id;
"""

# A user made a model judge (or no longer one): their grades stop (or start) filling pairs.
MODEL_JUDGE_CHANGES = f"""
    UPDATE judgments_pair p
    SET human_grades = (SELECT count(*) FROM judgments_judgment j WHERE j.pair_id = p.id AND {human("j")})
    WHERE p.id IN (SELECT j.pair_id FROM judgments_judgment j JOIN jt_rows m ON m.user_id = j.rater_id);
"""

REBUILD = f"""
CREATE OR REPLACE FUNCTION jl_tally_rebuild(target bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE judgments_pair p SET human_grades = c.n
    FROM (SELECT p2.id, count(j.id) FILTER (WHERE NOT j.cant_judge AND NOT j.excluded AND mj.user_id IS NULL) AS n
          FROM judgments_pair p2 LEFT JOIN judgments_judgment j ON j.pair_id = p2.id
          LEFT JOIN judgments_modeljudge mj ON mj.user_id = j.rater_id
          WHERE p2.pool_id = target GROUP BY p2.id) c
    WHERE p.id = c.id AND p.human_grades <> c.n;
    DELETE FROM judgments_tally WHERE pool_id = target;
    INSERT INTO judgments_tally (pool_id, pairs, queued, complete, open_pairs, documents)
    SELECT target, count(p.id), count(p.id) FILTER (WHERE p.queued_at IS NOT NULL), count(p.id) FILTER (WHERE {complete("p")}),
           count(p.id) FILTER (WHERE {unfilled("p")} AND empty.id IS NULL),
           (SELECT count(*) FROM judgments_document WHERE pool_id = target)
    FROM judgments_pool pl LEFT JOIN judgments_pair p ON p.pool_id = pl.id
    LEFT JOIN judgments_document empty
         ON empty.pool_id = p.pool_id AND empty.id = p.document_id AND empty.title = '' AND empty.body = ''
    WHERE pl.id = target;
    INSERT INTO judgments_tally (pool_id, rater_id, graded, cant, judged_open)
    SELECT target, j.rater_id, count(*) FILTER (WHERE NOT j.cant_judge), count(*) FILTER (WHERE j.cant_judge),
           count(*) FILTER (WHERE {unfilled("p")} AND empty.id IS NULL)
    FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id JOIN judgments_pool pl ON pl.id = p.pool_id
    LEFT JOIN judgments_document empty
         ON empty.pool_id = p.pool_id AND empty.id = p.document_id AND empty.title = '' AND empty.body = ''
    WHERE p.pool_id = target GROUP BY j.rater_id;
END $$;
"""

# (table, event, transition tables, function body)
TRIGGERS = [
    ("judgments_judgment", "insert", "NEW TABLE AS jt_new", JUDGMENT_INSERTS),
    ("judgments_judgment", "update", "OLD TABLE AS jt_old NEW TABLE AS jt_new", JUDGMENT_UPDATES),
    ("judgments_judgment", "delete", "OLD TABLE AS jt_old", JUDGMENT_DELETES),
    ("judgments_pair", "insert", "NEW TABLE AS jt_new", PAIR_INSERTS),
    ("judgments_pair", "update", "OLD TABLE AS jt_old NEW TABLE AS jt_new", PAIR_UPDATES),
    ("judgments_pair", "delete", "OLD TABLE AS jt_old", PAIR_DELETES),
    ("judgments_document", "insert", "NEW TABLE AS jt_new", DOCUMENT_INSERTS),
    ("judgments_document", "update", "OLD TABLE AS jt_old NEW TABLE AS jt_new", DOCUMENT_UPDATES),
    ("judgments_document", "delete", "OLD TABLE AS jt_old", DOCUMENT_DELETES),
    ("judgments_pool", "update", "OLD TABLE AS jt_old NEW TABLE AS jt_new", POOL_UPDATES),
    ("judgments_pool", "delete", "OLD TABLE AS jt_old", POOL_DELETES),
    ("judgments_modeljudge", "insert", "NEW TABLE AS jt_rows", MODEL_JUDGE_CHANGES),
    ("judgments_modeljudge", "delete", "OLD TABLE AS jt_rows", MODEL_JUDGE_CHANGES),
]


def _name(table: str, event: str) -> str:
    return f"jl_tally_{table.removeprefix('judgments_')}_{event}s"


FILL_HUMAN_GRADES = f"""
UPDATE judgments_pair p SET human_grades = c.n
FROM (SELECT j.pair_id, count(*) AS n FROM judgments_judgment j WHERE {human("j")} GROUP BY j.pair_id) c
WHERE p.id = c.pair_id;
"""

FORWARD = (
    FILL_HUMAN_GRADES
    + REBUILD
    + "".join(_function(_name(t, e), body) for t, e, _, body in TRIGGERS)
    + "".join(
        f"CREATE TRIGGER {_name(t, e)} AFTER {e.upper()} ON {t} REFERENCING {tables}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {_name(t, e)}();\n"
        # ALWAYS: also in the bulk imports' sessions, which set session_replication_role = replica
        # (judgments.bulk; the history triggers fire ALWAYS too, migration 0012)
        f"ALTER TABLE {t} ENABLE ALWAYS TRIGGER {_name(t, e)};\n"
        for t, e, tables, _ in TRIGGERS
    )
    + "SELECT jl_tally_rebuild(id) FROM judgments_pool;\n"
)

BACKWARD = (
    "".join(f"DROP TRIGGER IF EXISTS {_name(t, e)} ON {t};\n" for t, e, _, _ in TRIGGERS)
    + "".join(f"DROP FUNCTION IF EXISTS {_name(t, e)}();\n" for t, e, _, _ in TRIGGERS)
    + "DROP FUNCTION IF EXISTS jl_tally_rebuild(bigint);\n"
)


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0019_merge_hardening"),
    ]

    operations = [
        migrations.AddField(
            model_name="pair",
            name="human_grades",
            field=models.SmallIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.CreateModel(
            name="Tally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("pool_id", models.BigIntegerField()),
                ("rater_id", models.BigIntegerField(blank=True, null=True)),
                ("pairs", models.IntegerField(db_default=0, default=0)),
                ("queued", models.IntegerField(db_default=0, default=0)),
                ("complete", models.IntegerField(db_default=0, default=0)),
                ("open_pairs", models.IntegerField(db_default=0, default=0)),
                ("documents", models.IntegerField(db_default=0, default=0)),
                ("graded", models.IntegerField(db_default=0, default=0)),
                ("cant", models.IntegerField(db_default=0, default=0)),
                ("judged_open", models.IntegerField(db_default=0, default=0)),
            ],
            options={
                "indexes": [models.Index(fields=["pool_id", "rater_id"], name="tally_pool_rater_idx")],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
