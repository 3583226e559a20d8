"""Campaign pages: an admin creates and edits pools, manages a pool's people (existing accounts, new
raters with a one-time set-password link, removal, deactivation) and teams, without Django admin."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from judgments import access
from judgments.models import CombineRule, Pair, Pool, QueueAccess, SearchConfiguration, Team

User = get_user_model()


@pytest.fixture
def admin_client(client, site_admin):
    client.force_login(site_admin)
    return client


def pool_post(**overrides) -> dict:
    data = {
        "name": "news",
        "description": "Fresh news searches.",
        "guidelines": "## Grade the **need**\n\n- read the need first",
        "raters_per_pair": "2",
        "combine_rule": "median",
        "queue_access": "engineers",
    }
    for g in range(5):
        data[f"label_{g}"] = f"Label {g}"
        data[f"description_{g}"] = f"What {g} means"
    data.update(overrides)
    return data


# --- Who may ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["engineer", "rater", "outsider"])
def test_only_admins_reach_the_campaign_pages(client, request, pool, team, role):
    client.force_login(request.getfixturevalue(role))
    urls = [
        reverse("campaign:index"),
        reverse("campaign:pool-new"),
        reverse("campaign:pool-edit", args=["robust"]),
        reverse("campaign:people", args=["robust"]),
        reverse("campaign:teams"),
        reverse("campaign:team", args=[team.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("campaign:pool-new"), pool_post()).status_code == 403
    assert client.post(reverse("campaign:rater-new", args=["robust"]), {"username": "x"}).status_code == 403
    assert not Pool.objects.filter(name="news").exists() and not User.objects.filter(username="x").exists()


def test_anonymous_is_sent_to_log_in(client):
    response = client.get(reverse("campaign:index"))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_admins_find_the_pages_in_the_navigation(admin_client, pool):
    page = admin_client.get("/").content.decode()
    assert reverse("campaign:index") in page and reverse("campaign:pool-new") in page
    detail = admin_client.get(reverse("judgments:pool-detail", args=["robust"])).content.decode()
    assert reverse("campaign:pool-edit", args=["robust"]) in detail
    assert reverse("campaign:people", args=["robust"]) in detail


def test_others_do_not_see_the_campaign_link(client, rater, pool):
    client.force_login(rater)
    assert reverse("campaign:index") not in client.get("/").content.decode()


# --- Pools ----------------------------------------------------------------------------------------------


def test_an_admin_creates_a_pool_with_every_setting(admin_client, site_admin):
    response = admin_client.post(reverse("campaign:pool-new"), pool_post())
    assert response.status_code == 302 and response["Location"] == reverse("campaign:people", args=["news"])
    pool = Pool.objects.get(name="news")
    assert pool.description == "Fresh news searches."
    assert pool.guidelines.startswith("## Grade the **need**")
    assert (pool.raters_per_pair, pool.combine_rule, pool.queue_access) == (2, "median", "engineers")
    assert pool.grade_scale[4] == {"grade": 4, "label": "Label 4", "description": "What 4 means"}
    assert [e["grade"] for e in pool.grade_scale] == [0, 1, 2, 3, 4]
    assert site_admin in pool.members.all()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", "two words", "whitespace"),
        ("name", "robust", "already exists"),
        ("raters_per_pair", "0", "greater than or equal to 1"),
        ("raters_per_pair", "21", "less than or equal to 20"),
        ("combine_rule", "vote", "not one of the available choices"),
        ("label_2", "", "required"),
    ],
)
def test_a_bad_pool_is_refused_with_the_field_named(admin_client, pool, field, value, message):
    response = admin_client.post(reverse("campaign:pool-new"), pool_post(**{field: value}))
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors[field])
    assert not Pool.objects.filter(name="news").exists()


def test_editing_saves_the_settings_but_never_the_name(admin_client, pool):
    url = reverse("campaign:pool-edit", args=["robust"])
    page = admin_client.get(url)
    assert "name" not in page.context["form"].fields
    assert "<strong>carefully</strong>" in page.content.decode()  # the current guidelines, rendered
    response = admin_client.post(url, pool_post(name="renamed", combine_rule="max", queue_access="admins"))
    assert response.status_code == 302
    pool.refresh_from_db()
    assert (pool.name, pool.combine_rule, pool.raters_per_pair) == ("robust", CombineRule.MAX, 2)
    assert pool.grade_scale[0]["label"] == "Label 0"


def test_the_preview_shows_the_guidelines_as_raters_see_them_and_saves_nothing(admin_client, pool):
    text = 'Read **slowly**.\n\n<script>alert(1)</script><a href="javascript:x()">x</a>'
    fragment = admin_client.post(reverse("campaign:guidelines-preview"), {"guidelines": text})
    html = fragment.content.decode()
    assert "<strong>slowly</strong>" in html and "<script" not in html and "javascript:" not in html
    url = reverse("campaign:pool-edit", args=["robust"])
    page = admin_client.post(url, pool_post(guidelines=text, preview="1"))
    assert page.status_code == 200 and "<strong>slowly</strong>" in page.content.decode()
    pool.refresh_from_db()
    assert pool.guidelines == "Grade **carefully**."


# --- People ---------------------------------------------------------------------------------------------


def _people(client, name="robust"):
    return reverse("campaign:people", args=[name])


def test_the_people_page_lists_members_with_roles_and_judgments(admin_client, pool, rater):
    page = admin_client.get(_people(admin_client))
    rows = {row["user"].username: row for row in page.context["rows"]}
    assert rows["rita_rater"]["roles"] == ["rater"]
    assert set(rows) == {"erin_engineer", "oscar_engineer", "rita_rater", "ray_rater"}


def test_an_existing_account_is_added_by_username_or_email(admin_client, pool, outsider, django_user_model):
    url = reverse("campaign:member-add", args=["robust"])
    assert admin_client.post(url, {"user": "OLLY_OUTSIDER", "role": "rater"}).status_code == 302
    assert outsider in pool.members.all() and access.is_rater(User.objects.get(pk=outsider.pk))
    other = django_user_model.objects.create_user("eve", email="eve@example.org")
    assert admin_client.post(url, {"user": "Eve@Example.org", "role": "engineer"}).status_code == 302
    eve = User.objects.get(pk=other.pk)
    assert eve in pool.members.all() and access.is_engineer(eve) and not access.is_rater(eve)


def test_an_unknown_or_ambiguous_account_is_refused(admin_client, pool, django_user_model):
    url = reverse("campaign:member-add", args=["robust"])
    response = admin_client.post(url, {"user": "nobody", "role": "rater"})
    assert (
        response.status_code == 400 and "No account has the username or e-mail" in response.content.decode()
    )
    django_user_model.objects.create_user("a1", email="same@example.org")
    django_user_model.objects.create_user("a2", email="same@example.org")
    response = admin_client.post(url, {"user": "same@example.org", "role": "rater"})
    assert response.status_code == 400 and "give the username instead" in response.content.decode()


def _link(response) -> str:
    match = re.search(r'value="(http://testserver/accounts/set-password/[^"]+)"', response.content.decode())
    assert match, "the page shows the link"
    return match.group(1).removeprefix("http://testserver")


def test_a_new_rater_sets_a_password_through_the_one_time_link_and_lands_on_grading(
    admin_client, client_factory, pool
):
    response = admin_client.post(
        reverse("campaign:rater-new", args=["robust"]), {"username": "newbie", "email": "n@example.org"}
    )
    assert response.status_code == 200
    user = User.objects.get(username="newbie")
    assert not user.has_usable_password() and access.is_rater(user) and user in pool.members.all()
    link = _link(response)

    browser = client_factory()
    opened = browser.get(link)
    assert opened.status_code == 302 and opened["Location"].endswith("/set-password/")  # token out of the URL
    form = browser.get(opened["Location"])
    assert form.status_code == 200 and "Choose your password" in form.content.decode()
    weak = browser.post(opened["Location"], {"new_password1": "newbie", "new_password2": "newbie"})
    assert weak.status_code == 200 and weak.context["form"].errors
    done = browser.post(
        opened["Location"], {"new_password1": "a-long-Secret-42", "new_password2": "a-long-Secret-42"}
    )
    assert done.status_code == 302 and done["Location"] == reverse("rating:grade", args=["robust"])
    assert browser.get(done["Location"]).status_code == 200  # logged in, grading
    assert User.objects.get(pk=user.pk).check_password("a-long-Secret-42")
    # Once used, the link is dead.
    again = client_factory()
    follow = again.get(again.get(link)["Location"])
    assert "This link no longer works" in follow.content.decode()


def _dead(client, url: str) -> bool:
    first = client.get(url)
    assert first.status_code == 302
    return "This link no longer works" in client.get(first["Location"]).content.decode()


def test_a_wrong_garbled_or_expired_link_does_not_work(client, settings, pool, rater):
    from judgments.campaign import accounts

    good = accounts.set_password_path(rater)
    uid = good.split("/")[3]
    assert _dead(client, f"/accounts/set-password/{uid}/abc-def/")
    assert _dead(client, "/accounts/set-password/%25%25/x/")
    settings.PASSWORD_RESET_TIMEOUT = -1  # every link is older than that
    assert _dead(client, good)


def test_a_taken_username_is_refused(admin_client, pool, rater):
    response = admin_client.post(reverse("campaign:rater-new", args=["robust"]), {"username": "Rita_Rater"})
    assert response.status_code == 400 and "is taken" in response.content.decode()


def test_an_admin_gets_no_link_for_another_admin(client, pool, django_user_model):
    access.ensure_role_groups()
    from django.contrib.auth.models import Group

    plain_admin = django_user_model.objects.create_user("pat", password="x")
    plain_admin.groups.add(Group.objects.get(name="admin"))
    other_admin = django_user_model.objects.create_user("quinn", password="x")
    other_admin.groups.add(Group.objects.get(name="admin"))
    pool.members.add(other_admin)
    client.force_login(plain_admin)
    response = client.post(reverse("campaign:member-link", args=["robust", other_admin.pk]))
    assert response.status_code == 302  # refused: back to the page, with no link on it
    assert "Send this link to" not in client.get(response["Location"]).content.decode()
    rater_link = client.post(
        reverse("campaign:member-link", args=["robust", pool.members.get(username="rita_rater").pk])
    )
    assert "Send this link to rita_rater" in rater_link.content.decode()


def test_removing_a_member_keeps_their_judgments(admin_client, pool, rater):
    from judgments import services

    query, document = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    pair = Pair.objects.create(pool=pool, query=query, document=document)
    services.record_judgment(pair, rater, grade=3)
    response = admin_client.post(reverse("campaign:member-remove", args=["robust", rater.pk]))
    assert response.status_code == 302
    assert rater not in pool.members.all() and rater.judgments.count() == 1


def test_deactivating_stops_logins_and_reactivating_restores_them(admin_client, client_factory, pool, rater):
    from tests.conftest import PASSWORD

    url = reverse("campaign:member-active", args=["robust", rater.pk])
    admin_client.post(url, {"active": "0"})
    assert not User.objects.get(pk=rater.pk).is_active

    def logs_in() -> bool:  # through the login page (django-axes wants the request)
        client = client_factory()
        client.post(reverse("login"), {"username": rater.username, "password": PASSWORD})
        return "_auth_user_id" in client.session

    assert not logs_in()
    admin_client.post(url, {"active": "1"})
    assert logs_in()


def test_an_admin_cannot_deactivate_themself(admin_client, pool, site_admin):
    pool.members.add(site_admin)
    admin_client.post(reverse("campaign:member-active", args=["robust", site_admin.pk]), {"active": "0"})
    assert User.objects.get(pk=site_admin.pk).is_active


# --- Teams ----------------------------------------------------------------------------------------------


def test_teams_are_created_and_engineers_added_and_removed(admin_client, outsider):
    response = admin_client.post(reverse("campaign:teams"), {"name": "ranking"})
    team = Team.objects.get(name="ranking")
    assert response["Location"] == reverse("campaign:team", args=[team.pk])
    assert admin_client.post(reverse("campaign:teams"), {"name": "Ranking"}).status_code == 200
    assert Team.objects.filter(name__iexact="ranking").count() == 1
    admin_client.post(reverse("campaign:team-member-add", args=[team.pk]), {"user": "olly_outsider"})
    assert outsider in team.members.all() and access.is_engineer(User.objects.get(pk=outsider.pk))
    admin_client.post(reverse("campaign:team-member-remove", args=[team.pk, outsider.pk]))
    assert outsider not in team.members.all()


def test_a_configuration_moves_between_teams_and_its_runs_follow_the_new_team(
    admin_client, configuration, other_team, engineer, other_engineer
):
    assert access.can_manage_configuration(engineer, configuration)
    response = admin_client.post(
        reverse("campaign:configuration-move", args=[configuration.pk]), {"team": other_team.pk}
    )
    assert response.status_code == 302
    moved = SearchConfiguration.objects.get(pk=configuration.pk)
    assert moved.team == other_team
    assert access.can_manage_configuration(other_engineer, moved)
    assert not access.can_manage_configuration(engineer, moved)


# --- Who may queue ---------------------------------------------------------------------------------------


def test_engineers_queue_unjudged_documents_only_where_the_pool_allows_it(client, engineer, pool, run):
    client.force_login(engineer)
    url = reverse("scoring:queue-unjudged", args=[run.configuration_id])
    assert client.post(url, {"k": "3"}).status_code == 403
    assert not Pair.objects.filter(pool=pool, queued_at__isnull=False).exists()
    pool.queue_access = QueueAccess.ENGINEERS
    pool.save()
    assert client.post(url, {"k": "3"}).status_code == 302
    assert Pair.objects.filter(pool=pool, queued_at__isnull=False).count() == 5  # q1: d1-d3, q2: d3, d1


@pytest.fixture
def client_factory():
    from django.test import Client

    return Client
