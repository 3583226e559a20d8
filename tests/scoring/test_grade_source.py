"""A pool's grade source (humans / fill / all) in scoring, on the real database: which grades make the
combined grade on both reading paths (the whole pool, some queries), against a plain Python reference,
the stored scores that follow, and a changed source queueing a full recompute."""

import random
import statistics
from collections import Counter

import numpy as np
import pytest
from django_tasks_db.models import DBTaskResult

from judgments import services as judgment_services
from judgments.judges.services import create_or_update_judge
from judgments.models import Document, Judgment, Pair, Query
from scoring.grades import pool_grades
from scoring.models import QueryScore

RULES = ("mean", "median", "majority", "min", "max")
SOURCES = ("humans", "fill", "all")


def combine(grades: list[int], rule: str) -> float:
    if rule == "mean":
        return sum(grades) / len(grades)
    if rule == "median":
        return float(statistics.median(grades))
    if rule == "majority":
        counts = Counter(grades)
        return float(min(g for g in counts if counts[g] == max(counts.values())))
    return float(min(grades) if rule == "min" else max(grades))


def reference(pool, rule: str, source: str, models: set[int]) -> dict[tuple[int, int], float]:
    """{(query pk, doc pk): combined grade} computed the slow, obvious way."""
    result = {}
    for pair in Pair.objects.filter(pool=pool).prefetch_related("judgments"):
        graded = [j for j in pair.judgments.all() if not j.cant_judge]
        humans = [j.grade for j in graded if j.rater_id not in models]
        machines = [j.grade for j in graded if j.rater_id in models]
        counted = {"humans": humans, "fill": humans or machines, "all": humans + machines}[source]
        if pair.final_grade is not None:
            result[(pair.query_id, pair.document_id)] = float(pair.final_grade)
        elif counted:
            result[(pair.query_id, pair.document_id)] = combine(counted, rule)
    return result


def as_dict(grades) -> dict[tuple[int, int], float]:
    return {
        (int(q), int(d)): float(g) for q, d, g in zip(grades.query, grades.doc, grades.grade, strict=True)
    }


def judges(pool, n=2):
    return [
        create_or_update_judge(pool, f"model{i}", base_url="http://127.0.0.1:9/v1", model="m")[0].user
        for i in range(n)
    ]


@pytest.fixture
def mixed_pool(pool, rater, other_rater):
    """8 queries x 10 documents, graded at random by two humans and two model judges (some can't
    judge, some final grades): pairs with humans only, models only, both, neither."""
    rng = random.Random(13)
    models = judges(pool)
    documents = Document.objects.bulk_create(
        Document(pool=pool, external_id=f"doc{d}", body="x") for d in range(10)
    )
    judgments = []
    for q in range(8):
        query = Query.objects.get_or_create(pool=pool, external_id=f"q{q}")[0]
        for document in documents:
            final = rng.randint(0, 4) if rng.random() < 0.08 else None
            pair = Pair.objects.create(pool=pool, query=query, document=document, final_grade=final)
            for who in rng.sample([rater, other_rater, *models], rng.randint(0, 4)):
                cant = rng.random() < 0.1
                judgments.append(
                    Judgment(
                        pair=pair,
                        rater=who,
                        grade=None if cant else rng.randint(0, 4),
                        cant_judge=cant,
                        cant_judge_reason="?" if cant else "",
                    )
                )
    Judgment.objects.bulk_create(judgments)
    return pool, {u.pk for u in models}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("rule", RULES)
def test_combined_grades_follow_the_source_on_both_reading_paths(mixed_pool, rule, source):
    pool, models = mixed_pool
    pool.combine_rule, pool.grade_source = rule, source
    pool.save()
    expected = reference(pool, rule, source, models)
    whole = pool_grades(pool)
    some = pool_grades(pool, Query.objects.filter(pool=pool).values_list("pk", flat=True))
    assert as_dict(whole) == pytest.approx(expected)
    assert as_dict(some) == pytest.approx(expected)
    assert np.all(np.diff(whole.query) >= 0)


def test_the_sources_differ_where_they_should(mixed_pool):
    pool, models = mixed_pool
    counts = {source: len(reference(pool, "mean", source, models)) for source in SOURCES}
    # fill and all grade the same pairs (some only models graded); humans fewer.
    assert counts["humans"] < counts["fill"] == counts["all"]
    fill, everyone = reference(pool, "mean", "fill", models), reference(pool, "mean", "all", models)
    assert fill != everyone  # pairs graded by humans and models: fill keeps only the humans'


def test_without_model_judges_every_source_reads_the_same(pool, rater, other_rater):
    for docid, grades in {"d1": (1, 4), "d2": (2, 2)}.items():
        pair = Pair.objects.create(
            pool=pool, query=Query.objects.get(pool=pool, external_id="q1"),
            document=Document.objects.get(pool=pool, external_id=docid),
        )  # fmt: skip
        judgment_services.record_judgment(pair, rater, grade=grades[0])
        judgment_services.record_judgment(pair, other_rater, grade=grades[1])
    got = {}
    for source in SOURCES:
        pool.grade_source = source
        pool.save()
        got[source] = as_dict(pool_grades(pool))
    assert got["humans"] == got["fill"] == got["all"] and sorted(got["all"].values()) == [2.0, 2.5]


@pytest.mark.django_db(transaction=True)
def test_stored_scores_follow_the_source_and_a_change_queues_a_recompute(
    pool, rater, configuration, django_capture_on_commit_callbacks
):
    (model,) = judges(pool, 1)
    q1 = Query.objects.get(pool=pool, external_id="q1")
    pairs = {
        d: Pair.objects.create(pool=pool, query=q1, document=Document.objects.get(pool=pool, external_id=d))
        for d in ("d1", "d2", "d3")
    }
    judgment_services.record_judgment(pairs["d1"], rater, grade=0)  # the human: d1 is useless
    judgment_services.record_judgment(pairs["d1"], model, grade=4)  # the model disagrees
    judgment_services.record_judgment(pairs["d2"], model, grade=3)  # only the model graded d2
    judgment_services.record_judgment(pairs["d3"], rater, grade=2)
    run = judgment_services.record_run(configuration, {"q1": ["d1", "d2", "d3"]}, source="api")

    def ndcg10():
        return QueryScore.objects.get(run=run, flavor="trec", query=q1).ndcg_10

    # humans: d1=0, d2 unjudged, d3=2: only d3 has gain, at rank 3.
    assert ndcg10() == pytest.approx((2 / np.log2(4)) / 2)
    for source, expected in {
        "fill": (3 / np.log2(3) + 2 / np.log2(4)) / (3 + 2 / np.log2(3)),  # d1=0 (human), d2=3 (model)
        "all": (2 + 3 / np.log2(3) + 2 / np.log2(4)) / (3 + 2 / np.log2(3) + 2 / np.log2(4)),  # d1=mean 2
    }.items():
        DBTaskResult.objects.all().delete()
        pool.grade_source = source
        pool.save()
        (task,) = DBTaskResult.objects.all()
        assert task.task_path == "scoring.tasks.recompute_pool" and task.args_kwargs["args"] == [pool.pk]
        from scoring.services import rescore_pool

        rescore_pool(pool)  # what the queued task does (a worker is not running in this test)
        assert ndcg10() == pytest.approx(expected), source


def test_score_pages_name_the_grade_source_beside_the_flavour(
    client, engineer, rater, pool, run, other_configuration
):
    from scoring.services import rescore_pool

    judgment_services.record_run(other_configuration, {"q1": ["d2", "d1"], "q2": ["d1"]}, source="api")
    for qid, docid, grade in (("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d1", 2)):
        pair = Pair.objects.create(
            pool=pool, query=Query.objects.get(pool=pool, external_id=qid),
            document=Document.objects.get(pool=pool, external_id=docid),
        )  # fmt: skip
        judgment_services.record_judgment(pair, rater, grade=grade)
    pool.grade_source = "fill"
    pool.save()
    rescore_pool(pool)
    client.force_login(engineer)
    for url in (
        "/pools/robust/leaderboard/",
        "/pools/robust/compare/?c=bm25&c=dense",
        f"/configurations/{run.configuration.pk}/scores/",
    ):
        page = client.get(url).content.decode()
        assert "grades: fill · mean" in page, url
    page = client.get("/pools/robust/leaderboard/").content.decode()
    assert "Humans; a model judge fills pairs no human graded, combined by mean of the raters" in page
