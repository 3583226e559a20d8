"""judgments.services: mapping external ids to keys, creating what is missing."""

import pytest

from judgments import services
from judgments.models import Document, Pool


@pytest.mark.parametrize("size", [10, 6000])  # the ORM path, and the temporary-table path (>= 5000)
def test_ensure_documents_maps_existing_and_creates_missing(pool, size):
    other = Pool.objects.create(name="elsewhere")
    Document.objects.create(pool=other, external_id="doc-1")  # same id, another pool: not this one's
    existing = {f"doc-{i}": Document.objects.create(pool=pool, external_id=f"doc-{i}").pk for i in range(3)}
    # Odd but legal ids: a backslash (escaped in COPY's text format), non-ASCII, a comma.
    wanted = [*existing, "back\\slash", "dé", "a,b", *(f"new-{i}" for i in range(size))]
    before = Document.objects.filter(pool=pool).count()

    keys = services.ensure_documents(pool, wanted + wanted[:5])

    assert set(keys) == set(wanted)
    assert all(keys[name] == pk for name, pk in existing.items())
    stored = dict(Document.objects.filter(pool=pool).values_list("external_id", "pk"))
    assert all(stored[name] == keys[name] for name in wanted)
    assert Document.objects.filter(pool=pool).count() == before + len(wanted) - len(existing)
    assert services.ensure_documents(pool, wanted) == keys  # again: nothing new


def test_ensure_documents_restores_the_settings_it_changes(pool):
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('work_mem', '5MB', true), set_config('enable_nestloop', 'on', true)"
        )
        services.ensure_documents(pool, [f"n-{i}" for i in range(5000)])
        cursor.execute("SELECT current_setting('work_mem'), current_setting('enable_nestloop')")
        assert cursor.fetchone() == ("5MB", "on")
