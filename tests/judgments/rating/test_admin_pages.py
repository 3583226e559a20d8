"""Admin pages of rating: building the queue, pairs without content, agreement, disagreements and final grades."""

import math
import random
import re
from urllib.parse import unquote

import krippendorff
import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from judgments import pool_keys, services
from judgments.exchange.exports.grades import combined_grades
from judgments.models import Document, Pair
from judgments.rating import adjudication, queue


def test_build_queue_from_the_page(client, site_admin, pool, run):
    client.force_login(site_admin)
    response = client.post(reverse("rating:queue-build", args=[pool.name]), {"k": "2"}, follow=True)
    assert "4 pair(s) newly queued" in response.content.decode()
    assert Pair.objects.queued().count() == 4  # q1: d1 d2, q2: d3 d1


def test_build_queue_rejects_a_bad_depth(client, site_admin, pool, run):
    client.force_login(site_admin)
    response = client.post(reverse("rating:queue-build", args=[pool.name]), {"k": "0"})
    assert response.status_code == 400
    assert not Pair.objects.queued().exists()


def test_send_one_configurations_unjudged_top_k_from_the_page(client, site_admin, pool, run, configuration):
    client.force_login(site_admin)
    page = client.get(reverse("rating:queue", args=[pool.name]), {"k": "1"}).content.decode()
    coverage = reverse("scoring:queue-coverage", args=[pool.name])
    assert f'hx-get="{coverage}?k=1"' in page  # the panel loads after the page (scoring's judged@k)
    panel = client.get(coverage, {"k": "1"}).content.decode()
    assert "bm25" in panel and "Send unjudged top 3" in panel and "showing k = 3" in panel
    client.post(
        reverse("rating:queue-configuration", args=[pool.name]), {"configuration": configuration.pk, "k": "1"}
    )
    assert {str(p) for p in Pair.objects.queued()} == {"q1 / d1", "q2 / d3"}


def test_add_a_pair_by_hand_from_the_page(client, site_admin, pool):
    client.force_login(site_admin)
    url = reverse("rating:queue-add", args=[pool.name])
    response = client.post(url, {"query_id": "q1", "document_id": "nope", "priority": "0"})
    assert response.status_code == 400 and "unknown document id" in response.content.decode()
    client.post(url, {"query_id": "q1", "document_id": "d2", "priority": "7"})
    assert [(str(p), p.priority) for p in Pair.objects.queued()] == [("q1 / d2", 7)]


def test_upload_pairs_all_or_nothing_with_line_numbers(client, site_admin, pool):
    client.force_login(site_admin)
    url = reverse("rating:queue-upload", args=[pool.name])
    bad = SimpleUploadedFile("pairs.tsv", b"q1\td1\nq2\td9\nq2 d1\n")
    response = client.post(url, {"file": bad, "priority": "0"})
    content = response.content.decode()
    assert response.status_code == 400 and "line 3:" in content and "Nothing was queued" in content
    assert not Pair.objects.exists()
    good = SimpleUploadedFile("pairs.tsv", b"q1\td1\nq2\td3\n")
    client.post(url, {"file": good, "priority": "0"})
    assert {str(p) for p in Pair.objects.queued()} == {"q1 / d1", "q2 / d3"}


def test_pairs_without_content_are_keyset_paged(client, site_admin, pool, configuration, monkeypatch):
    from judgments.rating import queue_views

    docs = [f"new{i}" for i in range(5)]
    services.record_run(configuration, {"q1": docs}, source="api")
    queue.build_queue(pool, 10)  # priority by rank: new0 first
    monkeypatch.setattr(queue_views, "MISSING_CONTENT_PER_PAGE", 2)
    client.force_login(site_admin)
    url = reverse("rating:missing-content", args=[pool.name])
    seen, after = [], None
    for _ in range(3):
        page = client.get(url, {"after": after} if after else {}).content.decode()
        seen += [d for d in docs if f">{d}<" in page]
        found = re.search(r'href="\?after=([^"]+)"', page)
        after = found and unquote(found.group(1))
    assert sorted(seen) == docs and len(seen) == 5 and after is None  # every pair once, then no next link
    expected = [str(p).split(" / ")[1] for p in queue.pairs_without_content(pool)]
    assert expected == sorted(expected, key=lambda d: docs.index(d))  # highest priority (best rank) first
    assert "No more pairs" in client.get(url, {"after": "-99:1"}).content.decode()


def test_pairs_without_content_are_listed_for_admins(client, site_admin, pool, configuration):
    services.record_run(configuration, {"q1": ["d1", "fresh-doc"]}, source="api")
    queue.build_queue(pool, 10)
    client.force_login(site_admin)
    content = client.get(reverse("rating:missing-content", args=[pool.name])).content.decode()
    assert "fresh-doc" in content and ">d1<" not in content
    assert (
        "1</a></span> open without content"
        in client.get(reverse("rating:queue", args=[pool.name])).content.decode()
    )


# --- Agreement ---------------------------------------------------------------------------------------


@pytest.fixture
def graded_pool(pool, make_rater):
    """Four raters grade 30 pairs with some noise; each pair gets 2 to 4 grades, one rater also can't judge."""
    pool.raters_per_pair = 4
    pool.save()
    raters = [make_rater(f"r{i}") for i in range(4)]
    rng = random.Random(3)
    Document.objects.bulk_create(
        [Document(pool=pool, external_id=f"x{i:02d}", title=f"x{i}") for i in range(15)]
    )
    keys = [
        (q.pk, d.pk) for q in pool.queries.all() for d in pool.documents.filter(external_id__startswith="x")
    ]
    pairs = Pair.objects.in_bulk(pool_keys.ensure_pairs(pool, keys).values())
    truth = {pk: rng.randint(0, 4) for pk in pairs}
    for pk, pair in pairs.items():
        for rater in rng.sample(raters, rng.randint(2, 4)):
            grade = min(4, max(0, truth[pk] + rng.choice([-2, -1, 0, 0, 0, 1])))
            services.record_judgment(pair, rater, grade=grade)
    some = next(iter(pairs.values()))
    extra = make_rater("r_cant")
    services.record_judgment(some, extra, cant_judge=True, reason="cannot read it")
    return pool, raters


def test_agreement_matches_krippendorff_and_sklearn(graded_pool):
    pool, raters = graded_pool
    result = adjudication.pool_agreement(pool)
    ratings = adjudication.pool_ratings(pool)

    pair_ids = sorted(ratings)
    matrix = np.array([[ratings[p].get(r.pk, np.nan) for p in pair_ids] for r in raters], dtype=float)
    expected_alpha = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    assert result.alpha == pytest.approx(expected_alpha)
    assert result.n_units == len(pair_ids) == 30
    assert result.n_raters == 4  # the can't-judge answer is no grade

    assert len(result.kappas) == 6
    for row in result.kappas:
        a, b = row["rater_a"].pk, row["rater_b"].pk
        both = [p for p in pair_ids if a in ratings[p] and b in ratings[p]]
        expected = cohen_kappa_score(
            [ratings[p][a] for p in both],
            [ratings[p][b] for p in both],
            weights="quadratic",
            labels=[0, 1, 2, 3, 4],
        )
        assert row["n"] == len(both)
        assert row["kappa"] == pytest.approx(expected)


def test_agreement_page_shows_alpha_and_kappas_with_their_n(client, site_admin, graded_pool):
    pool, _ = graded_pool
    result = adjudication.pool_agreement(pool)
    client.force_login(site_admin)
    content = client.get(reverse("rating:agreement", args=[pool.name])).content.decode()
    assert f'<span class="n" id="alpha">{result.alpha:.3f}</span>' in content
    assert '<span class="n" id="alpha-n">30</span>' in content
    first = result.kappas[0]
    assert f'<td class="num">{first["kappa"]:.3f}</td><td class="num">{first["n"]}</td>' in content


def test_agreement_without_overlap_is_undefined(client, site_admin, pool, rater, queued):
    services.record_judgment(queued(pool, "q1", "d1"), rater, grade=2)
    result = adjudication.pool_agreement(pool)
    assert math.isnan(result.alpha) and result.n_units == 0 and result.kappas == []
    client.force_login(site_admin)
    assert (
        '<span class="n" id="alpha">—</span>'
        in client.get(reverse("rating:agreement", args=[pool.name])).content.decode()
    )


# --- Disagreements and final grades ----------------------------------------------------------------


@pytest.fixture
def disputed(pool, rater, other_rater, queued):
    pool.raters_per_pair = 2
    pool.save()
    wide, narrow = queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    services.record_judgment(wide, rater, grade=0, note="off topic")
    services.record_judgment(wide, other_rater, grade=3, note="answers it")
    services.record_judgment(narrow, rater, grade=2)
    services.record_judgment(narrow, other_rater, grade=3)
    return wide, narrow


def test_disagreements_are_pairs_two_or_more_grades_apart(disputed, pool):
    wide, _ = disputed
    assert [(p, p.spread) for p in adjudication.disagreements(pool)] == [(wide, 3)]


def test_unsettled_disagreements_come_first_then_the_widest(
    pool, rater, other_rater, site_admin, queued, disputed
):
    wide, _ = disputed
    settled, wider = queued(pool, "q2", "d1"), queued(pool, "q2", "d2")
    for pair, (a, b) in ((settled, (0, 4)), (wider, (0, 4))):
        services.record_judgment(pair, rater, grade=a)
        services.record_judgment(pair, other_rater, grade=b)
    services.set_final_grade(settled, 2, site_admin)
    assert [(p, p.spread) for p in adjudication.disagreements(pool)] == [(wider, 4), (wide, 3), (settled, 4)]


def test_disagreement_page_shows_grades_and_notes_side_by_side(client, site_admin, pool, disputed):
    client.force_login(site_admin)
    content = client.get(reverse("rating:disagreements", args=[pool.name])).content.decode()
    for text in ("rita_rater", "off topic", "ray_rater", "answers it", 'id="pair-'):
        assert text in content
    assert "q1 / d2" not in content and content.count('class="card disagreement') == 1


def test_final_grade_replaces_the_combined_grade(client, site_admin, pool, disputed):
    wide, _ = disputed
    assert combined_grades(pool)[("q1", "d1")] == pytest.approx(1.5)  # mean of 0 and 3
    client.force_login(site_admin)
    response = client.post(reverse("rating:final-grade", args=[pool.name, wide.pk]), {"grade": "1"})
    assert response.status_code == 302 and response["Location"].endswith(f"#pair-{wide.pk}")
    wide.refresh_from_db()
    assert (wide.final_grade, wide.final_by) == (1, site_admin)
    assert combined_grades(pool)[("q1", "d1")] == 1.0
    client.post(reverse("rating:final-grade", args=[pool.name, wide.pk]), {"grade": ""})
    assert combined_grades(pool)[("q1", "d1")] == pytest.approx(1.5)


def test_final_grade_of_a_pair_in_another_pool_is_404(client, site_admin, pool, disputed):
    from judgments.models import Pool

    other = Pool.objects.create(name="other")
    wide, _ = disputed
    client.force_login(site_admin)
    assert (
        client.post(reverse("rating:final-grade", args=[other.name, wide.pk]), {"grade": "1"}).status_code
        == 404
    )
    wide.refresh_from_db()
    assert wide.final_grade is None
