"""Incremental scoring: after each change, the rows the signal receivers left behind must equal a full
recompute of the pool, value for value, and only the affected (run, query) cells may be rewritten."""

import random
import threading

import pytest
from django.db import transaction

from judgments import services as judgment_services
from judgments.models import Document, Judgment, Pair, Pool, Query, Ranking, SearchConfiguration
from judgments.signals import grades_changed
from scoring.models import JUDGED_FIELDS, METRIC_FIELDS, UDCG_FIELDS, CellScore, QueryScore
from scoring.services import rescore_pool, rescore_queries

VALUES = (
    "has_ranking",
    "has_relevant",
    *METRIC_FIELDS.values(),
    *JUDGED_FIELDS.values(),
    *UDCG_FIELDS.values(),
)


def snapshot(pool) -> dict[tuple[int, int, str], tuple]:
    """Every stored score of the pool: (run, query, flavour) -> (pk, every value)."""
    rows = QueryScore.objects.filter(run__configuration__pool=pool).values_list(
        "run_id", "query_id", "flavor", "pk", *VALUES
    )
    return {(run, query, flavour): tuple(rest) for run, query, flavour, *rest in rows}


def values(table: dict) -> dict:
    return {key: row[1:] for key, row in table.items()}


@pytest.fixture
def busy_pool(pool, team, raters, configuration, other_configuration):
    """Six queries: q1-q5 graded by one or two raters (q5 only 0s), q6 never graded; three
    configurations with an old and a current run each, some of them missing queries."""
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(1, 13)]
    for qid in ("q1", "q2", "q3", "q4", "q5", "q6"):
        Query.objects.get_or_create(pool=pool, external_id=qid)
    for qid in ("q1", "q2", "q3", "q4", "q5"):
        for docid in rng.sample(docs, 7):
            grade = 0 if qid == "q5" else rng.randint(0, 4)
            judge(pool, raters[0], qid, docid, grade)
            if rng.random() < 0.4:
                judge(
                    pool,
                    raters[1],
                    qid,
                    docid,
                    0 if qid == "q5" else max(0, min(4, grade + rng.choice([-1, 1]))),
                )
    third = SearchConfiguration.objects.create(pool=pool, team=team, name="hybrid")
    for config in (configuration, other_configuration, third):
        for _ in range(2):
            rankings = {
                qid: rng.sample(docs + ["u1", "u2"], rng.randint(3, 10))
                for qid in ("q1", "q2", "q3", "q5", "q6")
            }
            if config is not third:
                rankings["q4"] = rng.sample(docs, 5)
            judgment_services.record_run(config, rankings, source="api")
    rescore_pool(pool)
    return pool


@pytest.fixture
def raters(db, django_user_model):
    return [django_user_model.objects.create_user(username=f"rater{i}") for i in range(2)]


def judge(pool, rater, qid, docid, grade):
    query, _ = Query.objects.get_or_create(pool=pool, external_id=qid)
    document, _ = Document.objects.get_or_create(pool=pool, external_id=docid)
    pair, _ = Pair.objects.get_or_create(pool=pool, query=query, document=document)
    return judgment_services.record_judgment(pair, rater, grade=grade)


def assert_incremental_equals_full(pool, before: dict, changed_queries: set[str]) -> dict:
    """The rows now stored equal a full recompute; rows of other queries were not rewritten."""
    incremental = snapshot(pool)
    assert values(incremental) != values(before), "the change should have changed some scores"
    changed = set(
        Query.objects.filter(pool=pool, external_id__in=changed_queries).values_list("pk", flat=True)
    )
    untouched = {key: row for key, row in before.items() if key[1] not in changed}
    assert {key: incremental.get(key) for key in untouched} == untouched  # same rows, same pks
    rescore_pool(pool)
    full = snapshot(pool)
    assert values(incremental) == values(full)
    return full


def test_changing_one_grade_updates_only_that_query_and_equals_full_recompute(
    busy_pool, raters, django_capture_on_commit_callbacks
):
    before = snapshot(busy_pool)
    judgment = Judgment.objects.filter(pair__query__external_id="q2", rater=raters[0]).order_by("pk").first()
    with django_capture_on_commit_callbacks(execute=True):
        judgment_services.record_judgment(judgment.pair, raters[0], grade=(judgment.grade + 2) % 5)
    assert_incremental_equals_full(busy_pool, before, {"q2"})


def test_a_distractor_grade_changes_udcg_of_that_query_only_and_equals_full_recompute(
    busy_pool, raters, django_capture_on_commit_callbacks
):
    judgment_services.set_distractors(busy_pool, True)
    before = snapshot(busy_pool)
    ranking = Ranking.objects.filter(query__pool=busy_pool, query__external_id="q3").order_by("pk").first()
    docid = Document.objects.get(pk=ranking.doc_ids[0]).external_id  # first in some run's ranking
    with django_capture_on_commit_callbacks(execute=True):
        Judgment.objects.filter(pair__query=ranking.query, pair__document_id=ranking.doc_ids[0]).delete()
        judge(busy_pool, raters[0], "q3", docid, -1)
    full = assert_incremental_equals_full(busy_pool, before, {"q3"})
    q3 = ranking.query_id
    changed = [key for key in full if key[1] == q3 and full[key][-4:] != before[key][-4:]]
    assert changed, "some run ranks the distractor in its top 100: its UDCG must have changed"


def test_a_second_rater_makes_a_grade_fractional(busy_pool, raters, django_capture_on_commit_callbacks):
    before = snapshot(busy_pool)
    judgment = Judgment.objects.filter(pair__query__external_id="q1", rater=raters[0], grade=4).first()
    judgment = judgment or Judgment.objects.filter(pair__query__external_id="q1", rater=raters[0]).first()
    with django_capture_on_commit_callbacks(execute=True):
        Judgment.objects.filter(pair=judgment.pair, rater=raters[1]).delete()
        judgment_services.record_judgment(judgment.pair, raters[1], grade=(judgment.grade + 1) % 5)
    assert_incremental_equals_full(busy_pool, before, {"q1"})


def test_a_grade_for_a_previously_ungraded_query_adds_its_rows(
    busy_pool, raters, django_capture_on_commit_callbacks
):
    before = snapshot(busy_pool)
    q6 = Query.objects.get(pool=busy_pool, external_id="q6")
    assert not any(key[1] == q6.pk for key in before)
    with django_capture_on_commit_callbacks(execute=True):
        judge(busy_pool, raters[0], "q6", "d3", 3)
    full = assert_incremental_equals_full(busy_pool, before, {"q6"})
    # every run gets its q6 rows, with or without a ranking for it
    assert sum(1 for key in full if key[1] == q6.pk) == 6 * 4


def test_deleting_the_last_judgment_of_a_query_removes_its_rows(
    busy_pool, raters, django_capture_on_commit_callbacks
):
    q6_pair = judge(busy_pool, raters[0], "q6", "d1", 2).pair
    rescore_pool(busy_pool)
    before = snapshot(busy_pool)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        # what a service deleting judgments does: delete, then announce the pairs after commit
        Judgment.objects.filter(pair=q6_pair).delete()
        transaction.on_commit(lambda: grades_changed.send(sender=Pool, pool=busy_pool, pair_ids=[q6_pair.pk]))
    full = assert_incremental_equals_full(busy_pool, before, {"q6"})
    assert not any(key[1] == q6_pair.query_id for key in full)


def test_deleting_one_of_two_judgments_changes_the_combined_grade(
    busy_pool, raters, django_capture_on_commit_callbacks
):
    before = snapshot(busy_pool)
    pairs = Pair.objects.filter(pool=busy_pool, judgments__rater=raters[1]).filter(judgments__rater=raters[0])
    pair = next(
        p
        for p in pairs
        if len(set(p.judgments.values_list("grade", flat=True))) == 2 and p.query.external_id != "q5"
    )
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        Judgment.objects.filter(pair=pair, rater=raters[1]).delete()
        transaction.on_commit(lambda: grades_changed.send(sender=Pool, pool=busy_pool, pair_ids=[pair.pk]))
    assert_incremental_equals_full(busy_pool, before, {pair.query.external_id})


def test_a_final_grade_updates_the_scores(busy_pool, raters, site_admin, django_capture_on_commit_callbacks):
    before = snapshot(busy_pool)
    pair = Pair.objects.filter(pool=busy_pool, query__external_id="q5").first()  # q5: every grade 0
    with django_capture_on_commit_callbacks(execute=True):
        judgment_services.set_final_grade(pair, 4, site_admin)
    full = assert_incremental_equals_full(busy_pool, before, {"q5"})
    assert any(row[2] for key, row in full.items() if key[1] == pair.query_id)  # has_relevant now


def test_a_submitted_run_is_scored_on_every_graded_query(
    busy_pool, configuration, django_capture_on_commit_callbacks
):
    before = snapshot(busy_pool)
    with django_capture_on_commit_callbacks(execute=True):
        run = judgment_services.record_run(configuration, {"q1": ["d1", "d2"], "q9": ["d4"]}, source="api")
    incremental = snapshot(busy_pool)
    assert {key: incremental[key] for key in before} == before  # other runs untouched
    new_rows = {key: row for key, row in incremental.items() if key[0] == run.pk}
    assert len(new_rows) == 5 * 4  # q1-q5 are graded; q9 and q6 are not
    assert sum(1 for row in new_rows.values() if row[1]) == 4  # only q1 has a ranking
    rescore_pool(busy_pool)
    assert values(snapshot(busy_pool)) == values(incremental)


@pytest.mark.parametrize("few_queries", [50, 1])
def test_rescoring_one_run_drops_rows_of_queries_no_longer_graded(
    busy_pool, configuration, monkeypatch, few_queries
):
    """rescore_run removes the run's rows of a query that lost its grades without a signal; the
    result equals a full recompute. few_queries=1 takes the batched path."""
    import scoring.cells
    import scoring.receivers
    import scoring.services

    monkeypatch.setattr(scoring.services, "FEW_QUERIES", few_queries)
    run = configuration.runs.order_by("-id").first()
    q2 = Query.objects.get(pool=busy_pool, external_id="q2")
    Judgment.objects.filter(pair__query=q2).delete()  # no signal: q2's rows are stale
    summary = scoring.services.rescore_run(run)
    assert summary.deleted >= 1
    assert not CellScore.objects.filter(run=run, query=q2).exists()
    incremental = values(snapshot(busy_pool))
    rescore_pool(busy_pool)
    full = values(snapshot(busy_pool))
    assert {k: v for k, v in full.items() if k[0] == run.pk} == {
        k: v for k, v in incremental.items() if k[0] == run.pk
    }


@pytest.mark.parametrize("ungraded", [2, 20])
def test_rescoring_one_run_reads_only_graded_rankings_when_most_queries_are_not(
    busy_pool, configuration, monkeypatch, ungraded
):
    """With most of the pool's queries ungraded, rescore_run reads the rankings of graded queries
    only; with most graded, it reads them all (a filter would cost more). Same rows either way."""
    import scoring.cells
    import scoring.receivers
    import scoring.services

    extra = {f"u{i}": ["d1", "d2"] for i in range(ungraded)}
    run = judgment_services.record_run(
        configuration, {"q1": ["d1", "d3"], "q6": ["d2"], **extra}, source="api"
    )
    read = []
    original = scoring.services.read_rankings

    def spy(*args, **kwargs):
        runs, queries, docs = original(*args, **kwargs)
        read.extend(queries.tolist())
        return runs, queries, docs

    monkeypatch.setattr(scoring.services, "read_rankings", spy)
    scoring.services.rescore_run(run)
    graded = set(
        Query.objects.filter(pool=busy_pool, pairs__judgments__isnull=False).values_list("pk", flat=True)
    )
    if ungraded == 20:  # 5 graded of 26 queries
        assert set(read) == {Query.objects.get(pool=busy_pool, external_id="q1").pk}
    else:  # 5 graded of 8
        assert set(read) - graded  # q6 and the u queries were read too
    incremental = values(snapshot(busy_pool))
    monkeypatch.setattr(scoring.services, "read_rankings", original)
    rescore_pool(busy_pool)
    assert {k: v for k, v in values(snapshot(busy_pool)).items() if k[0] == run.pk} == {
        k: v for k, v in incremental.items() if k[0] == run.pk
    }


def test_rescore_queries_of_nothing_changes_nothing(busy_pool):
    before = snapshot(busy_pool)
    assert rescore_queries(busy_pool, []).rows == 0
    assert snapshot(busy_pool) == before


def change_q1_and_q3(busy_pool, raters, capture) -> None:
    """Change one grade of q1 and of q3, then send grades_changed for all their pairs at once (what an
    import does), running the commit callbacks."""
    with capture(execute=True):
        for qid in ("q1", "q3"):
            judgment = Judgment.objects.filter(pair__query__external_id=qid, rater=raters[0]).first()
            judgment_services.record_judgment(judgment.pair, raters[0], grade=(judgment.grade + 3) % 5)
        pair_ids = list(
            Pair.objects.filter(pool=busy_pool, query__external_id__in=["q1", "q3"]).values_list(
                "pk", flat=True
            )
        )
        grades_changed.send(sender=Pool, pool=busy_pool, pair_ids=pair_ids)


def test_a_big_import_recomputes_the_whole_pool(
    busy_pool, raters, monkeypatch, django_capture_on_commit_callbacks
):
    """From MANY_PAIRS changed pairs on, grades_changed rescores the pool instead of looking up the
    queries of every pair; the rows equal a full recompute either way."""
    import scoring.cells
    import scoring.receivers
    import scoring.services

    monkeypatch.setattr(scoring.receivers, "MANY_PAIRS", 2)
    calls = []
    original = scoring.services.rescore_pool
    monkeypatch.setattr(
        scoring.services, "rescore_pool", lambda pool: calls.append(pool.pk) or original(pool)
    )
    before = snapshot(busy_pool)
    change_q1_and_q3(busy_pool, raters, django_capture_on_commit_callbacks)
    assert calls == [busy_pool.pk]
    monkeypatch.setattr(scoring.services, "rescore_pool", original)
    assert_incremental_equals_full(busy_pool, before, {"q1", "q3"})


def test_many_queries_at_once_take_the_batched_path(
    busy_pool, raters, django_capture_on_commit_callbacks, settings
):
    import scoring.cells
    import scoring.receivers
    import scoring.services

    before = snapshot(busy_pool)
    original = scoring.services.FEW_QUERIES
    scoring.services.FEW_QUERIES = 1
    try:
        change_q1_and_q3(busy_pool, raters, django_capture_on_commit_callbacks)
    finally:
        scoring.services.FEW_QUERIES = original
    assert_incremental_equals_full(busy_pool, before, {"q1", "q3"})


@pytest.mark.django_db(transaction=True)
def test_read_ahead_on_a_second_connection_gives_the_same_rows(pool, team, configuration, monkeypatch):
    """Outside a transaction, a pool-wide recompute reads batches ahead on its own connection."""
    from django.contrib.auth import get_user_model

    import scoring.cells
    import scoring.receivers
    import scoring.services

    rater = get_user_model().objects.create_user(username="solo")
    rng = random.Random(3)
    for q in range(12):
        for d in range(6):
            judge(pool, rater, f"t{q}", f"d{d}", rng.randint(0, 4))
    for name in ("a", "b"):
        config = SearchConfiguration.objects.create(pool=pool, team=team, name=name)
        rankings = {f"t{q}": rng.sample([f"d{d}" for d in range(8)], 5) for q in range(12) if q % 5}
        judgment_services.record_run(config, rankings, source="api")  # scored at commit
    expected = values(snapshot(pool))
    CellScore.objects.filter(run__configuration__pool=pool).update(jk_ndcg_5=-1)
    CellScore.objects.filter(run__configuration__pool=pool, query__external_id="t3").delete()

    monkeypatch.setattr(scoring.cells, "BATCH_ENTRIES", 12)  # a few queries per batch
    started = []

    class Spy(scoring.services._ReadAhead):
        def __init__(self, load, batches):
            started.append(len(batches))
            super().__init__(load, batches)

    monkeypatch.setattr(scoring.services, "_ReadAhead", Spy)
    summary = rescore_pool(pool)
    assert started and started[0] > 3
    assert (summary.inserted, summary.updated, summary.deleted) == (2, 2 * 11, 0)
    assert values(snapshot(pool)) == expected

    # a failure on the reading connection reaches the caller, nothing is written, no thread is left
    original_read_stored, original_sync = scoring.services.read_stored, scoring.services.sync_rows

    def broken(*args, **kwargs):
        raise RuntimeError("lost the reading connection")

    monkeypatch.setattr(scoring.services, "read_stored", broken)
    CellScore.objects.filter(run__configuration__pool=pool).update(mrr=-1)
    with pytest.raises(RuntimeError, match="lost the reading connection"):
        rescore_pool(pool)
    assert not [t for t in threading.enumerate() if t.name.startswith("scoring-")]
    assert set(
        QueryScore.objects.filter(run__configuration__pool=pool, flavor="exp").values_list("mrr", flat=True)
    ) == {-1}

    # a failure on the writing side (the thread that writes behind) reaches the caller too, and the
    # transaction is rolled back: the rows written for earlier batches are gone again
    monkeypatch.setattr(scoring.services, "read_stored", original_read_stored)
    writes = []

    def failing_sync(cursor, rows, stored):
        writes.append(len(rows))
        if len(writes) == 2:
            raise RuntimeError("disk full")
        return original_sync(cursor, rows, stored)

    monkeypatch.setattr(scoring.services, "sync_rows", failing_sync)
    with pytest.raises(RuntimeError, match="disk full"):
        rescore_pool(pool)
    assert len(writes) >= 2
    assert not [t for t in threading.enumerate() if t.name.startswith("scoring-")]
    assert set(
        QueryScore.objects.filter(run__configuration__pool=pool, flavor="exp").values_list("mrr", flat=True)
    ) == {-1}
