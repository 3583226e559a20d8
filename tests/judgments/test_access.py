"""Every page needs a login; raters see nothing of configurations, runs or the admin."""

import pytest
from django.urls import reverse


@pytest.fixture
def urls(pool, configuration, run):
    return {
        "configurations": reverse("judgments:configuration-list", args=[pool.name]),
        "configuration": reverse("judgments:configuration-detail", args=[configuration.pk]),
        "run": reverse("judgments:run-detail", args=[run.pk]),
    }


@pytest.mark.parametrize("name", ["configurations", "configuration", "run"])
def test_rater_gets_403_or_404_on_configurations_and_runs(client, rater, urls, name, configuration):
    client.force_login(rater)
    response = client.get(urls[name])
    assert response.status_code in (403, 404)
    assert configuration.name.encode() not in response.content


@pytest.mark.parametrize("name", ["configurations", "configuration", "run"])
def test_engineer_of_the_pool_sees_configurations_and_runs(client, engineer, urls, name, configuration):
    client.force_login(engineer)
    response = client.get(urls[name])
    assert response.status_code == 200
    assert configuration.name.encode() in response.content


def test_run_page_shows_ranked_documents(client, engineer, urls):
    client.force_login(engineer)
    content = client.get(urls["run"]).content.decode()
    assert "d1 · d2 · d3" in content


def test_engineer_outside_the_pool_gets_404(client, pool, urls, django_user_model):
    from django.contrib.auth.models import Group

    stranger = django_user_model.objects.create_user("stranger", password="x")
    stranger.groups.add(Group.objects.get(name="engineer"))
    client.force_login(stranger)
    for url in urls.values():
        assert client.get(url).status_code == 404


def test_rater_cannot_open_the_admin(client, rater):
    client.force_login(rater)
    response = client.get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    response = client.get("/admin/judgments/judgment/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_can_open_every_admin_changelist(client, site_admin, run):
    from django.contrib import admin

    client.force_login(site_admin)
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("url", ["/", "/pools/robust/", "/pools/robust/configurations/"])
def test_anonymous_is_sent_to_login(client, pool, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_login_page_and_healthz_need_no_login(client, db):
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/healthz").json() == {"status": "ok"}


def test_rater_sees_only_member_pools(client, rater, pool):
    from judgments.models import Pool

    Pool.objects.create(name="secret-pool")
    client.force_login(rater)
    content = client.get("/").content.decode()
    assert "robust" in content and "secret-pool" not in content
    assert client.get("/pools/secret-pool/").status_code == 404


def test_rater_home_shows_no_configuration_counts(client, rater, configuration):
    client.force_login(rater)
    content = client.get("/").content.decode()
    assert "Configurations" not in content


def test_forbidden_and_missing_pages_use_the_site_layout(client, rater, pool, settings):
    settings.DEBUG = False
    client.force_login(rater)
    response = client.get("/pools/no-such-pool/")
    assert response.status_code == 404
    assert b"Back to your pools" in response.content and b"no-such-pool" not in response.content


def test_database_sessions_use_the_configured_random_page_cost(db):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        assert cursor.fetchone()[0] == "1.1"


def test_every_user_finds_the_api_token_page_in_the_menu(client, rater, pool):
    client.force_login(rater)
    assert b'href="/account/api-token/"' in client.get("/").content
    assert client.get("/account/api-token/").status_code == 200


def test_get_pool_or_404_turns_only_a_missing_pool_into_404(pool, engineer, monkeypatch):
    from django.db import DatabaseError
    from django.db.models import QuerySet
    from django.http import Http404

    from judgments import access

    assert access.get_pool_or_404(engineer, access.pools_for, name="robust") == pool
    with pytest.raises(Http404):
        access.get_pool_or_404(engineer, access.pools_for, name="no-such-pool")
    with pytest.raises(Http404):
        access.get_pool_or_404(engineer, access.pools_for, pk="not-a-number")

    def database_down(self, *args, **kwargs):
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(QuerySet, "get", database_down)
    with pytest.raises(DatabaseError):  # a 500 that is logged, not "No such pool"
        access.get_pool_or_404(engineer, access.pools_for, name="robust")
