"""The distractor grade (-1, issue 13): a pool setting, off by default, that every write path obeys.

Off: the grading page (full and fragment), the API, the services, adjudication and the database itself
refuse -1 with a message naming the pool. On: -1 is an ordinary judgment grade. The setting cannot be
turned off while a grade uses it (page, API, service and database trigger)."""

import re

import pytest
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from django.utils.html import escape
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import services
from judgments.judges.services import pair_messages
from judgments.models import DISTRACTOR, DISTRACTOR_DESCRIPTION, Judgment, ModelJudge, Pair, Pool
from judgments.rating import grading, queue
from tests.conftest import login
from tests.judgments.rating.conftest import queued_pair

FRAGMENT = {"HTTP_X_RATING_FRAGMENT": "1"}
REFUSED = "Grade -1 (distractor) is not enabled for pool robust"
REFUSED_RE = re.escape(REFUSED)


def _api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _enable(pool: Pool) -> Pool:
    return services.set_distractors(pool, True)


def _pair(pool: Pool, qid="q1", docid="d1") -> Pair:
    return queued_pair(pool, qid, docid)


# --- Services and the database -------------------------------------------------------------------------


def test_distractor_grade_is_off_by_default_and_refused_by_the_service(pool, rater):
    assert pool.distractors_enabled is False and pool.grades == (0, 1, 2, 3, 4)
    pair = _pair(pool)
    with pytest.raises(services.JudgmentError, match=REFUSED_RE):
        services.record_judgment(pair, rater, grade=-1)
    assert not Judgment.objects.exists()


def test_an_enabled_pool_stores_minus_1_as_an_ordinary_grade_with_history(pool, rater):
    _enable(pool)
    pair = _pair(pool)
    services.record_judgment(pair, rater, grade=-1, note="same words, wrong product")
    judgment = Judgment.objects.get()
    assert (judgment.grade, judgment.note) == (-1, "same words, wrong product")
    assert pair.judgment_changes.get().new_grade == -1
    assert pool.grades == (-1, 0, 1, 2, 3, 4)
    with pytest.raises(services.JudgmentError):
        services.record_judgment(pair, rater, grade=-2)


def test_the_database_refuses_minus_1_in_a_pool_without_the_grade_whatever_writes_it(pool, rater):
    pair = _pair(pool)
    with pytest.raises(IntegrityError, match=REFUSED_RE), transaction.atomic():
        Judgment.objects.create(pair=pair, rater=rater, grade=-1)
    with pytest.raises(IntegrityError, match=REFUSED_RE), transaction.atomic():
        Pair.objects.filter(pk=pair.pk).update(final_grade=-1)
    with pytest.raises(IntegrityError), transaction.atomic():  # below -1: the CHECK constraint
        Judgment.objects.create(pair=pair, rater=rater, grade=-2)
    Pool.objects.filter(pk=pool.pk).update(distractors_enabled=True)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judgments_judgment (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note,"
            " created_at, updated_at) VALUES (%s, %s, -1, false, '', '', now(), now())",
            [pair.pk, rater.pk],
        )
    assert Judgment.objects.get().grade == -1


def test_the_setting_cannot_be_turned_off_while_a_grade_uses_it(pool, rater, site_admin):
    _enable(pool)
    pair = _pair(pool)
    services.record_judgment(pair, rater, grade=-1)
    with pytest.raises(services.JudgmentError, match="1 judgment or final grade of pool robust use"):
        services.set_distractors(pool, False)
    with pytest.raises(IntegrityError, match="has distractor grades"), transaction.atomic():
        Pool.objects.filter(pk=pool.pk).update(distractors_enabled=False)
    services.record_judgment(pair, rater, grade=0)
    services.set_final_grade(pair, -1, site_admin)
    with pytest.raises(services.JudgmentError):
        services.set_distractors(pool, False)
    services.set_final_grade(pair, None, site_admin)
    services.set_distractors(pool, False)
    assert Pool.objects.get().distractors_enabled is False


def test_adjudication_refuses_a_final_minus_1_unless_the_pool_has_the_grade(client, pool, site_admin):
    pair = _pair(pool)
    url = reverse("rating:final-grade", args=[pool.name, pair.pk])
    response = login(client, site_admin).post(url, {"grade": "-1"}, follow=True)
    assert REFUSED in response.content.decode()
    assert Pair.objects.get().final_grade is None
    _enable(pool)
    client.post(url, {"grade": "-1"})
    assert Pair.objects.get().final_grade == -1


def test_the_final_grade_form_offers_minus_1_only_where_the_pool_has_it(pool):
    from judgments.rating.forms import FinalGradeForm

    def offered(form):
        return [value for value, _ in form.fields["grade"].choices]

    form = FinalGradeForm({"grade": "-1"}, pool=pool)
    assert offered(form) == ["", 0, 1, 2, 3, 4] and not form.is_valid()
    assert form.refusal().startswith(REFUSED) and form.refusal().endswith("from 0 to 4, or clear it.")
    _enable(pool)
    form = FinalGradeForm({"grade": "-1"}, pool=pool)
    assert offered(form) == ["", -1, 0, 1, 2, 3, 4] and form.is_valid() and form.cleaned_data["grade"] == -1


@pytest.mark.parametrize("enabled, lowest", [(False, 0), (True, -1)])
def test_a_final_grade_out_of_range_is_refused_naming_the_pools_grades(
    client, pool, site_admin, enabled, lowest
):
    services.set_distractors(pool, enabled)
    pair = _pair(pool)
    url = reverse("rating:final-grade", args=[pool.name, pair.pk])
    page = login(client, site_admin).post(url, {"grade": "7"}, follow=True).content.decode()
    assert f"Choose a final grade from {lowest} to 4, or clear it." in page
    with pytest.raises(services.JudgmentError, match=f"A final grade must be an integer from {lowest} to 4"):
        services.set_final_grade(pair, 7, site_admin)
    assert Pair.objects.get().final_grade is None


# --- The grading page ------------------------------------------------------------------------------------


def test_grading_page_offers_the_distractor_button_and_key_only_when_enabled(client, pool, rater):
    _pair(pool)
    url = reverse("rating:grade", args=[pool.name])
    page = login(client, rater).get(url).content.decode()
    assert 'value="-1"' not in page and "Distractor" not in page
    _enable(pool)
    page = client.get(url).content.decode()
    assert 'name="grade" value="-1"' in page
    assert '<kbd>d</kbd><span class="grade-text"><span class="grade-label">Distractor</span>' in page
    assert page.index('value="-1"') < page.index('value="0"')  # below 0, listed first
    assert "<kbd>d</kbd></td><td>Distractor" in page  # the keyboard help


@pytest.mark.parametrize("fragment", [False, True])
def test_posting_minus_1_is_refused_where_the_pool_has_no_distractor_grade(client, pool, rater, fragment):
    pair = _pair(pool)
    grading.next_pair_for(rater, pool)  # served to the rater, as the page does
    url = reverse("rating:grade-pair", args=[pool.name, pair.pk])
    extra = FRAGMENT if fragment else {}
    response = login(client, rater).post(url, {"grade": "-1"}, follow=not fragment, **extra)
    assert REFUSED in response.content.decode()
    assert not Judgment.objects.exists()
    _enable(pool)
    response = client.post(url, {"grade": "-1"}, **extra)
    assert response.status_code in (200, 302)
    assert Judgment.objects.get().grade == -1


# --- The API ------------------------------------------------------------------------------------------------


def test_api_refuses_minus_1_in_a_pool_without_the_grade_and_stores_it_in_one_with_it(pool, rater):
    queue.add_pairs(pool, [("q1", "d1")])
    body = {"pool": "robust", "query_id": "q1", "doc_id": "d1", "grade": -1}
    response = _api(rater).post("/api/judgments/", body, format="json")
    assert response.status_code == 400
    assert REFUSED in str(response.json())
    assert not Judgment.objects.exists()
    _enable(pool)
    assert _api(rater).post("/api/judgments/", body, format="json").status_code == 201
    assert Judgment.objects.get().grade == -1


def test_admins_turn_the_distractor_grade_on_and_off_through_the_api(pool, rater, site_admin, engineer):
    url = "/api/pools/robust/distractors/"
    assert _api(engineer).put(url, {"distractors_enabled": True}, format="json").status_code == 403
    response = _api(site_admin).put(url, {"distractors_enabled": True}, format="json")
    assert response.status_code == 200 and response.json()["distractors_enabled"] is True
    assert Pool.objects.get().distractors_enabled is True
    assert _api(site_admin).get("/api/pools/robust/").json()["distractors_enabled"] is True
    pool.refresh_from_db()
    services.record_judgment(_pair(pool), rater, grade=-1)
    response = _api(site_admin).put(url, {"distractors_enabled": False}, format="json")
    assert response.status_code == 400
    assert "use the distractor grade (-1)" in response.json()["detail"]
    assert Pool.objects.get().distractors_enabled is True


# --- The campaign's settings page ---------------------------------------------------------------------------


def _settings_post(pool: Pool, **changes) -> dict:
    data = {
        "description": pool.description,
        "guidelines": pool.guidelines,
        "raters_per_pair": pool.raters_per_pair,
        "combine_rule": pool.combine_rule,
        "queue_access": pool.queue_access,
    }
    for grade in (-1, 0, 1, 2, 3, 4):
        data[f"label_{grade}"] = "Misleads" if grade == -1 else pool.grade_label(grade)
        data[f"description_{grade}"] = ""
    data.update(changes)
    return data


def test_admins_enable_the_grade_and_name_it_on_the_settings_page(client, pool, rater, site_admin):
    url = reverse("campaign:pool-edit", args=[pool.name])
    page = login(client, site_admin).get(url).content.decode()
    assert 'name="distractors_enabled"' in page and 'name="label_-1"' in page
    client.post(url, _settings_post(pool, distractors_enabled="on"))
    pool.refresh_from_db()
    assert pool.distractors_enabled is True
    assert {"grade": -1, "label": "Misleads", "description": DISTRACTOR_DESCRIPTION} in pool.grade_scale
    services.record_judgment(_pair(pool), rater, grade=-1)
    response = client.post(url, _settings_post(pool))  # unticked: turn it off
    assert response.status_code == 200
    assert "use the distractor grade (-1): change them before turning it off" in response.content.decode()
    assert Pool.objects.get().distractors_enabled is True


# --- Model judges ----------------------------------------------------------------------------------------------


def test_the_judges_prompt_describes_the_distractor_grade_only_when_the_pool_enables_it(
    pool, django_user_model
):
    user = django_user_model.objects.create_user(username="judge-llm")
    judge = ModelJudge.objects.create(user=user, pool=pool, base_url="http://127.0.0.1:9/v1", model="m")
    pair = Pair.objects.select_related("query", "document").get(pk=_pair(pool).pk)
    text = " ".join(m["content"] for m in pair_messages(judge, pair))
    assert "Distractor" not in text and "-1" not in text
    _enable(pool)
    judge.pool.refresh_from_db()
    text = " ".join(m["content"] for m in pair_messages(judge, pair))
    assert "-1 = Distractor" in text
    assert DISTRACTOR == -1


@pytest.mark.parametrize(
    "own",
    [
        None,  # the pool's scale has no -1 entry (the grade turned on through the API or a service)
        {"grade": -1, "label": "Misleads", "description": ""},  # an entry that leaves the words out
        {"grade": -1, "label": "Misleads", "description": "Sends the reader the wrong way."},
    ],
)
def test_raters_and_model_judges_read_the_same_description_of_minus_1(
    client, pool, rater, django_user_model, own
):
    pool.grade_scale = [e for e in pool.grade_scale if e.get("grade") != DISTRACTOR] + ([own] if own else [])
    pool.save()
    _enable(pool)
    label = (own or {}).get("label") or "Distractor"
    description = (own or {}).get("description") or DISTRACTOR_DESCRIPTION
    pair = Pair.objects.select_related("query", "document").get(pk=_pair(pool).pk)
    page = login(client, rater).get(reverse("rating:grade", args=[pool.name])).content.decode()
    assert (
        f'<span class="grade-label">{escape(label)}</span><span class="grade-desc">{escape(description)}</span>'
        in page
    )
    user = django_user_model.objects.create_user(username="judge-llm")
    judge = ModelJudge.objects.create(user=user, pool=pool, base_url="http://127.0.0.1:9/v1", model="m")
    prompt = " ".join(m["content"] for m in pair_messages(judge, pair))
    assert f"-1 = {label}: {description}" in prompt
