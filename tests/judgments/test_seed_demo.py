import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from judgments.models import Document, Judgment, Pool, Query, Ranking, Run, SearchConfiguration


def test_seed_demo_loads_the_demo_once(db, settings):
    settings.DEBUG = True
    call_command("seed_demo")
    counts = (Pool.objects.count(), Query.objects.count(), Document.objects.count(), Judgment.objects.count())
    call_command("seed_demo")
    assert (
        Pool.objects.count(),
        Query.objects.count(),
        Document.objects.count(),
        Judgment.objects.count(),
    ) == counts
    assert counts[:3] == (1, 20, 200)
    assert counts[3] > 100
    assert SearchConfiguration.objects.count() == 2
    assert Run.objects.count() == 2
    assert Ranking.objects.count() == 40


def test_demo_users_log_in_with_password_demo(db, settings):
    settings.DEBUG = True
    call_command("seed_demo")
    for username, role in [
        ("admin", "admin"),
        ("engineer", "engineer"),
        ("rater", "rater"),
        ("rater2", "rater"),
    ]:
        user = authenticate(RequestFactory().post("/accounts/login/"), username=username, password="demo")
        assert user is not None, username
        assert user.groups.filter(name=role).exists()
    assert authenticate(RequestFactory().post("/"), username="admin", password="demo").is_superuser


def test_demo_documents_read_like_real_pages(db, settings):
    settings.DEBUG = True
    call_command("seed_demo")
    doc = Document.objects.get(external_id="d01-01")
    assert doc.title.startswith("The complete guide to cold brew")
    assert len(doc.body) > 60 and doc.url.startswith("https://")
    assert Query.objects.get(external_id="q01").information_need


def test_seed_demo_refuses_without_debug(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("seed_demo")
    assert not Pool.objects.exists()


def test_login_page_names_the_demo_logins_only_with_the_demo(client, db, settings):
    settings.DEBUG = True
    assert b"password <code>demo</code>" not in client.get("/accounts/login/").content
    call_command("seed_demo")
    assert b"password <code>demo</code>" in client.get("/accounts/login/").content
    settings.DEBUG = False
    assert b"password <code>demo</code>" not in client.get("/accounts/login/").content


def test_demo_queue_has_pairs_for_the_raters(db, settings):
    from django.contrib.auth import get_user_model

    from judgments.models import Pair
    from judgments.rating import grading

    settings.DEBUG = True
    call_command("seed_demo")
    assert Pair.objects.queued().exists()
    rater = get_user_model().objects.get(username="rater")
    pair = grading.next_pair_for(rater, Pool.objects.get(name="demo"))
    assert pair is not None and pair.document.has_content
