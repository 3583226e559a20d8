"""judgments.services: mapping external ids to keys, creating what is missing."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments import pool_keys, services
from judgments.models import Document, Pool


@pytest.mark.parametrize("size", [10, 6000])  # the ORM path, and the temporary-table path (>= 5000)
def test_ensure_documents_maps_existing_and_creates_missing(pool, size):
    other = Pool.objects.create(name="elsewhere")
    Document.objects.create(pool=other, external_id="doc-1")  # same id, another pool: not this one's
    existing = {f"doc-{i}": Document.objects.create(pool=pool, external_id=f"doc-{i}").pk for i in range(3)}
    # Odd but legal ids: a backslash (escaped in COPY's text format), non-ASCII, a comma.
    wanted = [*existing, "back\\slash", "dé", "a,b", *(f"new-{i}" for i in range(size))]
    before = Document.objects.filter(pool=pool).count()

    keys = pool_keys.ensure_documents(pool, wanted + wanted[:5])

    assert set(keys) == set(wanted)
    assert all(keys[name] == pk for name, pk in existing.items())
    stored = dict(Document.objects.filter(pool=pool).values_list("external_id", "pk"))
    assert all(stored[name] == keys[name] for name in wanted)
    assert Document.objects.filter(pool=pool).count() == before + len(wanted) - len(existing)
    assert pool_keys.ensure_documents(pool, wanted) == keys  # again: nothing new


def test_ensure_documents_restores_the_settings_it_changes(pool):
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('work_mem', '5MB', true), set_config('enable_nestloop', 'on', true)"
        )
        pool_keys.ensure_documents(pool, [f"n-{i}" for i in range(5000)])
        cursor.execute("SELECT current_setting('work_mem'), current_setting('enable_nestloop')")
        assert cursor.fetchone() == ("5MB", "on")


@given(st.lists(st.one_of(st.text(max_size=6), st.integers(), st.none()), max_size=8))
def test_the_fast_ranking_check_never_passes_a_ranking_the_full_check_refuses(docs):
    """validate_rankings skips its per-document loop for rankings _plain_ranking clears: every one it
    clears must be one the loop finds no problem with (unicode whitespace, repeats, empty ids, non-strings)."""
    from judgments.services import _plain_ranking, validate_rankings

    if _plain_ranking(docs):
        slow = [d for d in docs if not isinstance(d, str) or not d or any(ch.isspace() for ch in d)]
        assert slow == [] and len(set(docs)) == len(docs)
        assert validate_rankings({"q1": docs}) == []
    else:
        assert validate_rankings({"q1": docs}) != []


def _synchronous_commit() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_commit_without_waiting_only_for_a_transaction_of_its_own(transactional_db):
    """A hold or a rescore may commit without waiting for the disk; a larger transaction around it, which
    may hold a grade, keeps waiting."""
    from django.db import transaction

    with transaction.atomic():
        services.commit_without_waiting()
        assert _synchronous_commit() == "off"
    assert _synchronous_commit() == "on"  # the setting was the transaction's only
    with transaction.atomic():
        with transaction.atomic():
            services.commit_without_waiting()
            assert _synchronous_commit() == "on"
