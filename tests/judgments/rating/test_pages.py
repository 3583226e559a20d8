"""The rating pages through the test client: grading, my judgments, and who may open what."""

import pytest
from django.urls import reverse

from judgments import services
from judgments.models import Document, Judgment, JudgmentChange, Pair
from judgments.rating import grading, queue
from judgments.rating.views import FRAGMENT_HEADER, URL_HEADER, highlight, render_markdown

FRAGMENT = {"headers": {FRAGMENT_HEADER: "1"}}


@pytest.fixture
def grade_url(pool):
    return reverse("rating:grade", args=[pool.name])


def pair_url(pool, pair):
    return reverse("rating:grade-pair", args=[pool.name, pair.pk])


# --- The grading page -------------------------------------------------------------------------------


def test_grading_page_shows_query_need_guidelines_and_document(client, pool, rater, queued, grade_url):
    pair = queued(pool, "q1", "d1")
    Document.objects.filter(pk=pair.document_id).update(url="https://example.org/d1", extra={"lang": "en"})
    client.force_login(rater)
    response = client.get(grade_url)
    content = response.content.decode()
    assert response.status_code == 200
    assert "query q1" in content and "need of q1" in content
    assert "Grade <strong>carefully</strong>." in content  # guidelines as Markdown
    assert "Title d1" in content and "https://example.org/d1" in content and "lang" in content
    for entry in pool.grade_scale:
        assert entry["label"] in content and entry["description"] in content
    assert f'action="{pair_url(pool, pair)}"' in content


def test_grading_page_reveals_no_configuration_rank_score_or_other_grade(
    client, pool, rater, other_rater, run, configuration, grade_url
):
    pool.raters_per_pair = 2
    pool.save()
    queue.build_queue(pool, k=10)
    pair = Pair.objects.get(query__external_id="q1", document__external_id="d1")
    services.record_judgment(pair, other_rater, grade=4, note="other rater's secret note")
    client.force_login(rater)
    content = client.get(grade_url).content.decode()
    assert configuration.name not in content and "bm25" not in content
    assert "other rater's secret note" not in content and "ray_rater" not in content
    assert "priority" not in content.lower() and "rank" not in content.lower()


def test_posting_a_grade_stores_it_and_redirects_to_the_next_pair(client, pool, rater, queued, grade_url):
    first, second = queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    client.force_login(rater)
    served = grading.next_pair_for(rater, pool)
    response = client.post(pair_url(pool, served), {"grade": "3", "note": "solid"})
    assert response.status_code == 302 and response["Location"] == grade_url
    judgment = Judgment.objects.get()
    assert (judgment.pair, judgment.rater, judgment.grade, judgment.note) == (served, rater, 3, "solid")
    assert {first, second} - {served} == {grading.next_pair_for(rater, pool)}


def test_fragment_post_answers_with_the_next_pair_in_place(client, pool, rater, queued, grade_url):
    queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    client.force_login(rater)
    served = grading.next_pair_for(rater, pool)
    response = client.post(pair_url(pool, served), {"grade": "2"}, **FRAGMENT)
    assert response.status_code == 200 and response[URL_HEADER] == grade_url
    content = response.content.decode()
    assert "<html" not in content and 'id="grade-form"' in content
    assert "Saved 2 (Relevant)." in content
    following = Pair.objects.get(held_by=rater)
    assert following != served and f'action="{pair_url(pool, following)}"' in content


@pytest.mark.parametrize("fragment", [False, True])
@pytest.mark.parametrize("grade", ["5", "abc", "-1", "2.5"])
def test_a_grade_outside_0_to_4_is_refused_with_a_message(client, pool, rater, queued, grade, fragment):
    pair = queued(pool, "q1", "d1")
    client.force_login(rater)
    grading.next_pair_for(rater, pool)
    response = client.post(pair_url(pool, pair), {"grade": grade}, **(FRAGMENT if fragment else {}))
    assert response.status_code == 400
    content = response.content.decode()
    assert f"Nothing was saved: “{grade}” is not a grade. Choose a grade from 0 to 4." in content
    assert 'class="rating-notice error"' in content
    assert f'data-pair="{pair.pk}"' in content  # the same pair, to grade again
    assert not Judgment.objects.exists()


def test_skip_serves_another_pair_and_stores_nothing(client, pool, rater, queued, grade_url):
    queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    client.force_login(rater)
    client.get(grade_url)
    skipped = Pair.objects.get(held_by=rater)
    client.post(pair_url(pool, skipped), {"action": "skip"})
    client.get(grade_url)
    assert Pair.objects.get(held_by=rater) != skipped
    assert not Judgment.objects.exists()


def test_skip_says_skipped_in_place_and_after_a_redirect(client, pool, rater, queued, grade_url):
    queued(pool, "q1", "d1"), queued(pool, "q1", "d2"), queued(pool, "q2", "d3")
    client.force_login(rater)
    client.get(grade_url)
    first = Pair.objects.get(held_by=rater)
    fragment = client.post(pair_url(pool, first), {"action": "skip"}, headers={FRAGMENT_HEADER: "1"})
    assert "Skipped" in fragment.content.decode()
    second = Pair.objects.get(held_by=rater)
    client.post(pair_url(pool, second), {"action": "skip"})  # a plain form: the next page says it
    assert "Skipped" in client.get(grade_url).content.decode()


def test_the_guidelines_are_open_on_a_raters_first_pair_only(client, pool, rater, queued, grade_url):
    queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    client.force_login(rater)
    first = client.get(grade_url).content.decode()
    assert '<details class="guidelines" id="guidelines" open>' in first
    pair = Pair.objects.get(held_by=rater)
    client.post(pair_url(pool, pair), {"action": "grade", "grade": "2"})
    assert '<details class="guidelines" id="guidelines">' in client.get(grade_url).content.decode()


def test_all_skipped_pairs_can_be_served_again(client, pool, rater, queued, grade_url):
    pair = queued(pool, "q1", "d1")
    client.force_login(rater)
    client.get(grade_url)
    client.post(pair_url(pool, pair), {"action": "skip"})
    content = client.get(grade_url).content.decode()
    assert "You skipped 1 pair" in content and not Pair.objects.filter(held_by=rater).exists()
    client.post(reverse("rating:review-skipped", args=[pool.name]))
    client.get(grade_url)
    assert Pair.objects.get(held_by=rater) == pair


def test_cant_judge_needs_a_reason(client, pool, rater, queued):
    pair = queued(pool, "q1", "d1")
    client.force_login(rater)
    grading.next_pair_for(rater, pool)
    response = client.post(pair_url(pool, pair), {"action": "cant", "reason": "  "})
    assert response.status_code == 400 and "Say why" in response.content.decode()
    assert not Judgment.objects.exists()
    client.post(pair_url(pool, pair), {"action": "cant", "reason": "page is in Finnish"})
    judgment = Judgment.objects.get()
    assert (
        judgment.cant_judge and judgment.grade is None and judgment.cant_judge_reason == "page is in Finnish"
    )


def test_back_opens_the_previous_pair_with_its_grade_and_changing_it_keeps_history(
    client, pool, rater, queued, grade_url
):
    queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    client.force_login(rater)
    first = grading.next_pair_for(rater, pool)
    client.post(pair_url(pool, first), {"grade": "1"})
    page = client.get(grade_url).content.decode()
    assert f'data-previous-url="{pair_url(pool, first)}"' in page

    again = client.get(pair_url(pool, first)).content.decode()
    assert "Changing your earlier judgment" in again and 'class="grade-button g1 current"' in again
    client.post(pair_url(pool, first), {"grade": "3"})
    assert Judgment.objects.get(pair=first).grade == 3
    assert list(
        JudgmentChange.objects.filter(pair=first).order_by("id").values_list("old_grade", "new_grade")
    ) == [
        (None, 1),
        (1, 3),
    ]


def test_a_rater_cannot_open_a_pair_judged_only_by_another_rater(client, pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    services.record_judgment(pair, other_rater, grade=4, note="mine, not yours")
    client.force_login(rater)
    response = client.get(pair_url(pool, pair))
    assert response.status_code == 404
    assert b"mine, not yours" not in response.content


def test_a_rater_cannot_grade_a_pair_held_by_another(client, pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    grading.next_pair_for(other_rater, pool)
    client.force_login(rater)
    response = client.post(pair_url(pool, pair), {"grade": "2"})
    assert response.status_code == 302
    assert not Judgment.objects.exists()


def test_nothing_left_says_so(client, pool, rater, grade_url):
    client.force_login(rater)
    content = client.get(grade_url).content.decode()
    assert "Nothing to grade right now" in content


# --- My judgments ------------------------------------------------------------------------------------


@pytest.fixture
def my_three(pool, rater, other_rater, queued):
    pool.raters_per_pair = 2
    pool.save()
    a, b, c = queued(pool, "q1", "d1"), queued(pool, "q1", "d2"), queued(pool, "q2", "d1")
    grading.save_grade(a, rater, grade=1, note="note on a")
    grading.save_grade(b, rater, grade=3)
    grading.save_grade(c, rater, cant_judge=True, reason="broken page")
    grading.save_grade(a, other_rater, grade=4, note="other's note")
    return a, b, c


def test_my_judgments_lists_only_mine(client, pool, rater, my_three):
    client.force_login(rater)
    content = client.get(reverse("rating:my-judgments", args=[pool.name])).content.decode()
    assert "note on a" in content and "broken page" in content
    assert "other&#x27;s note" not in content and "other's note" not in content and "ray_rater" not in content


@pytest.mark.parametrize(
    ("params", "expected"),
    [({"grade": "3"}, {"d2"}), ({"grade": "cant"}, {"d1"}), ({"grade": "1"}, {"d1"})],
)
def test_my_judgments_filters_by_grade(client, pool, rater, my_three, params, expected):
    client.force_login(rater)
    page = client.get(reverse("rating:my-judgments", args=[pool.name]), params).context["page"]
    assert {j.pair.document.external_id for j in page.object_list} == expected


def test_my_judgments_filters_by_query(client, pool, rater, my_three):
    client.force_login(rater)
    page = client.get(reverse("rating:my-judgments", args=[pool.name]), {"query": "q2"}).context["page"]
    assert [j.pair.query.external_id for j in page.object_list] == ["q2"]
    unknown = client.get(reverse("rating:my-judgments", args=[pool.name]), {"query": "nope"})
    assert "No query of this pool has that id." in unknown.content.decode()


def test_my_judgments_pages_without_counting(client, pool, rater, queued):
    """51 judgments: two pages of 50 and 1, the total read from the stored tallies."""
    from judgments.rating import grading

    for i in range(51):
        grading.save_grade(queued(pool, f"q{i}", f"d{i}"), rater, grade=2)
    client.force_login(rater)
    url = reverse("rating:my-judgments", args=[pool.name])
    first = client.get(url).context["page"]
    assert len(first.object_list) == 50 and first.has_next() and first.paginator.num_pages == 2
    second = client.get(url, {"page": 2}).context["page"]
    assert len(second.object_list) == 1 and not second.has_next() and second.has_previous()
    assert "Page 2 of 2" in client.get(url, {"page": 2}).content.decode()
    by_grade = client.get(url, {"grade": "2", "page": 2})
    assert len(by_grade.context["page"].object_list) == 1 and "Page 2<" in by_grade.content.decode()


def test_changing_a_grade_from_my_judgments_returns_there(client, pool, rater, my_three):
    a, _, _ = my_three
    client.force_login(rater)
    back = reverse("rating:my-judgments", args=[pool.name]) + "?grade=1"
    response = client.post(pair_url(pool, a), {"grade": "2", "note": "note on a", "return_to": back})
    assert response.status_code == 302 and response["Location"] == back
    assert Judgment.objects.get(pair=a, rater=rater).grade == 2
    assert JudgmentChange.objects.filter(
        pair=a, rater=rater, action="changed", old_grade=1, new_grade=2
    ).exists()


def test_return_to_elsewhere_is_ignored(client, pool, rater, my_three, grade_url):
    a, _, _ = my_three
    client.force_login(rater)
    response = client.post(pair_url(pool, a), {"grade": "2", "return_to": "https://evil.example/"})
    assert response["Location"] == grade_url


# --- Who may open what -------------------------------------------------------------------------------


def test_rater_outside_the_pool_gets_404(client, pool, make_rater, queued):
    from judgments.models import Pool

    pair = queued(pool, "q1", "d1")
    stranger = make_rater("stranger")
    pool.members.remove(stranger)
    Pool.objects.create(name="elsewhere").members.add(stranger)
    client.force_login(stranger)
    for url in (
        reverse("rating:grade", args=[pool.name]),
        pair_url(pool, pair),
        reverse("rating:my-judgments", args=[pool.name]),
    ):
        assert client.get(url).status_code == 404
    assert client.post(pair_url(pool, pair), {"grade": "1"}).status_code == 404
    assert not Judgment.objects.exists()


def test_engineer_cannot_grade(client, pool, engineer, queued):
    pair = queued(pool, "q1", "d1")
    client.force_login(engineer)
    assert client.get(reverse("rating:grade", args=[pool.name])).status_code == 403
    assert client.post(pair_url(pool, pair), {"grade": "1"}).status_code == 403
    assert not Judgment.objects.exists()


def test_anonymous_is_sent_to_login(client, pool):
    response = client.get(reverse("rating:grade", args=[pool.name]))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


ADMIN_PAGES = ["queue", "missing-content", "agreement", "disagreements"]


@pytest.mark.parametrize("name", ADMIN_PAGES)
def test_admin_pages_are_for_admins_only(client, pool, rater, engineer, site_admin, name):
    url = reverse(f"rating:{name}", args=[pool.name])
    for user in (rater, engineer):
        client.force_login(user)
        assert client.get(url).status_code == 403
    client.force_login(site_admin)
    assert client.get(url).status_code == 200


@pytest.mark.parametrize(
    ("name", "data"),
    [("queue-build", {"k": "10"}), ("queue-add", {"query_id": "q1", "document_id": "d1", "priority": "0"})],
)
def test_raters_cannot_change_the_queue(client, pool, rater, name, data):
    client.force_login(rater)
    assert client.post(reverse(f"rating:{name}", args=[pool.name]), data).status_code == 403
    assert not Pair.objects.exists()


def test_rater_cannot_set_a_final_grade(client, pool, rater, queued):
    pair = queued(pool, "q1", "d1")
    client.force_login(rater)
    assert (
        client.post(reverse("rating:final-grade", args=[pool.name, pair.pk]), {"grade": "4"}).status_code
        == 403
    )
    pair.refresh_from_db()
    assert pair.final_grade is None


def _optional_url(name, *args):
    from django.urls import NoReverseMatch

    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


def _scoring_urls(pool, configuration, run):
    """Every page of the scoring app (whatever exists), with this pool, configuration or run filled in."""
    from django.urls import URLResolver, get_resolver

    query = pool.queries.order_by("pk").first()
    values = {
        "pool_name": pool.name,
        "configuration_id": configuration.pk,
        "run_id": run.pk,
        "query_id": query.pk,
    }
    [scoring] = [
        p for p in get_resolver().url_patterns if isinstance(p, URLResolver) and p.namespace == "scoring"
    ]
    urls = []
    for pattern in scoring.url_patterns:
        names = set(pattern.pattern.converters)
        if names <= set(values):  # a page keyed by something else is left to the scoring tests
            urls.append(reverse(f"scoring:{pattern.name}", kwargs={k: values[k] for k in names}))
    return urls


def test_rater_gets_403_or_404_on_configuration_run_and_score_pages(client, pool, rater, configuration, run):
    urls = [
        reverse("judgments:configuration-list", args=[pool.name]),
        reverse("judgments:configuration-detail", args=[configuration.pk]),
        reverse("judgments:run-detail", args=[run.pk]),
        *_scoring_urls(pool, configuration, run),
    ]
    # The score pages are among them: the leaderboard and a configuration's score history.
    assert reverse("scoring:leaderboard", args=[pool.name]) in urls
    assert reverse("scoring:configuration-history", args=[configuration.pk]) in urls
    client.force_login(rater)
    for url in urls:
        response = client.get(url)
        if response.status_code == 405:  # a POST-only action
            response = client.post(url)
        assert response.status_code in (403, 404), url
        assert configuration.name.encode() not in response.content, url


def test_rater_gets_403_or_404_from_the_api_on_configurations_runs_scores_and_others_judgments(
    client, pool, rater, other_rater, configuration, run, queued
):
    pair = queued(pool, "q1", "d1")
    theirs = services.record_judgment(pair, other_rater, grade=4, note="private note")
    client.force_login(rater)
    detail = {
        "api:configuration-detail": configuration.pk,
        "api:run-detail": run.pk,
        "api:judgment-detail": theirs.pk,
    }
    checked = 0
    for name, pk in detail.items():
        url = _optional_url(name, pk)
        if url is None:
            continue
        checked += 1
        response = client.get(url)
        assert response.status_code in (403, 404), url
        assert b"private note" not in response.content and configuration.name.encode() not in response.content
    for name in ("api:score-list", "api:configuration-list", "api:run-list"):
        url = _optional_url(name)
        if url is None:
            continue
        checked += 1
        response = client.get(url)
        assert response.status_code in (403, 404) or configuration.name.encode() not in response.content, url
    if not checked:
        pytest.skip("the REST API is not installed")


# --- Rendering is safe ---------------------------------------------------------------------------------


def test_highlight_escapes_everything_and_marks_whole_query_words():
    html = highlight('Cold <script>alert("brew")</script> & cold-brew; scold', ["cold", "brew", "amp"])
    assert "<script>" not in html
    assert html == (
        "<mark>Cold</mark> &lt;script&gt;alert(&quot;<mark>brew</mark>&quot;)&lt;/script&gt; &amp; "
        "<mark>cold</mark>-<mark>brew</mark>; scold"
    )


def test_guidelines_markdown_is_cleaned():
    html = render_markdown(
        '**Bold** <script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror="alert(1)">'
    )
    assert "<strong>Bold</strong>" in html
    assert "<script" not in html and "javascript:" not in html and "onerror" not in html


def test_document_html_is_escaped_on_the_page(client, pool, rater, queued):
    pair = queued(pool, "q1", "d1")
    Document.objects.filter(pk=pair.document_id).update(
        title="<b>q1</b> title", body="<img src=x onerror=alert(1)> query", url="javascript:alert(1)"
    )
    client.force_login(rater)
    content = client.get(reverse("rating:grade", args=[pool.name])).content.decode()
    assert "<img src=x" not in content and "&lt;img src=x onerror=alert(1)&gt; <mark>query</mark>" in content
    assert 'href="javascript:' not in content
