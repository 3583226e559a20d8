"""Helpers of the rating tests: queued pairs made directly, and more raters."""

import pytest
from django.utils import timezone

from judgments.models import Document, Pair, Query

PASSWORD = "correct-horse-battery"  # as in tests/conftest.py


def queued_pair(pool, qid: str, docid: str, priority: int = 0, *, content: bool = True) -> Pair:
    """A queued pair, creating the query and document when missing."""
    query, _ = Query.objects.get_or_create(pool=pool, external_id=qid, defaults={"text": f"query {qid}"})
    document, _ = Document.objects.get_or_create(
        pool=pool,
        external_id=docid,
        defaults={"title": f"Title {docid}" if content else "", "body": f"Body {docid}" if content else ""},
    )
    pair, _ = Pair.objects.update_or_create(
        pool=pool,
        query=query,
        document=document,
        defaults={"queued_at": timezone.now(), "priority": priority},
    )
    return pair


@pytest.fixture
def make_rater(db, django_user_model, pool):
    """make_rater(name) -> a rater who is a member of `pool`."""
    from django.contrib.auth.models import Group

    from judgments.access import ensure_role_groups

    ensure_role_groups()

    def _make(username: str):
        user = django_user_model.objects.create_user(username=username, password=PASSWORD)
        user.groups.add(Group.objects.get(name="rater"))
        pool.members.add(user)
        return user

    return _make


@pytest.fixture
def queued(db):
    """queued(pool, qid, docid, priority=0, content=True) -> a queued Pair."""
    return queued_pair
