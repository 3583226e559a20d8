"""The rankings' no-duplicate check in C: intarray's sort and uniq instead of count(DISTINCT).

`ranking_no_duplicate_documents` calls jl_array_has_no_duplicates(doc_ids) for every ranking written.
Migration 0001 defined it in SQL as count(*) = count(DISTINCT x) over unnest(arr): a sub-query per
row, 80 ms for a 500,000-line run (5,000 rankings of 100), a third of a whole run import. With the
contrib extension intarray (shipped with PostgreSQL; trusted, so the database owner may create it)
the body becomes one expression, which the planner inlines into the check: 16 ms for the same rows
(`tests/bench/run.py bench_exchange`). intarray goes into its own schema, so that its operators do not take
over those of int4[] columns elsewhere.

intarray works on int4, so document keys must stay below 2^31 (2.1 billion documents over the life
of the database): `document_key_fits_int4` says so, by name, when a document would pass it; a ranking
holding a larger number, which no document can have, is refused with "integer out of range".

On a server without intarray the SQL body stays: slower, same answers.
"""

from django.db import migrations, models

SCHEMA = "jl_intarray"

C_BODY = """
CREATE OR REPLACE FUNCTION jl_array_has_no_duplicates(arr anyarray) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT {schema}.icount({schema}.uniq({schema}.sort(arr::int4[]))) = cardinality(arr) $$;
"""

SQL_BODY = """
CREATE OR REPLACE FUNCTION jl_array_has_no_duplicates(arr anyarray) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT count(*) = count(DISTINCT x) FROM unnest(arr) AS x $$;
"""


def intarray_schema(cursor) -> str | None:
    """The schema intarray is installed in, installing it into SCHEMA if it is not; None when the
    server does not have it (or this role may not create it)."""
    cursor.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'intarray'")
    row = cursor.fetchone()
    if row is not None:
        return row[0]
    cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'intarray'")
    if cursor.fetchone() is None:
        return None
    cursor.execute("SAVEPOINT jl_intarray")
    try:
        cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        cursor.execute(f"CREATE EXTENSION intarray SCHEMA {SCHEMA}")
    except Exception:  # no privilege: keep the SQL body
        cursor.execute("ROLLBACK TO SAVEPOINT jl_intarray")
        return None
    cursor.execute("RELEASE SAVEPOINT jl_intarray")
    return SCHEMA


def use_intarray(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        schema = intarray_schema(cursor)
        if schema is not None:
            cursor.execute(C_BODY.replace("{schema}", schema))


def use_sql(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(SQL_BODY)
        cursor.execute(
            "SELECT 1 FROM pg_extension WHERE extname = 'intarray' AND extnamespace = %s::regnamespace",
            [SCHEMA],
        )
        if cursor.fetchone() is not None:
            cursor.execute("DROP EXTENSION intarray")
            cursor.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}")


class Migration(migrations.Migration):
    dependencies = [("judgments", "0002_judgment_history_trigger")]

    operations = [
        migrations.AddConstraint(
            model_name="document",
            constraint=models.CheckConstraint(
                condition=models.Q(id__lt=2**31), name="document_key_fits_int4"
            ),
        ),
        migrations.RunPython(use_intarray, use_sql),
    ]
