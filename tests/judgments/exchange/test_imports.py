"""Import services: TREC queries, qrels and runs go in whole or not at all, with line-numbered errors."""

import pytest

from judgments.exchange.formats import FormatError
from judgments.exchange.imports import ImportSummary, import_qrels, import_queries, import_run
from judgments.models import Document, Judgment, JudgmentChange, Pair, Query, Ranking, Run
from judgments.signals import grades_changed


def _problems(error: pytest.ExceptionInfo) -> list[tuple[int, str]]:
    return [(p.line, p.field) for p in error.value.problems]


# --- Queries -----------------------------------------------------------------------------------------


def test_import_queries_tsv_creates_new_and_updates_changed_text(pool):
    summary = import_queries(
        pool, b"q1\tquery q1\nq2\tbetter text\n# comment\n\nq9\tnew query\n", name="q.tsv"
    )
    assert summary == ImportSummary("q.tsv", "queries", 3, created=1, updated=1, unchanged=1)
    assert Query.objects.get(pool=pool, external_id="q2").text == "better text"
    assert Query.objects.get(pool=pool, external_id="q9").text == "new query"
    # TSV carries no information need: the stored one is kept.
    assert Query.objects.get(pool=pool, external_id="q2").information_need == "need of q2"


def test_import_queries_jsonl_sets_information_need(pool):
    data = (
        '{"id": "q1", "text": "query q1", "information_need": "find the manual"}\n{"id": 301, "text": "t"}\n'
    )
    summary = import_queries(pool, data.encode(), name="q.jsonl")
    assert (summary.created, summary.updated, summary.unchanged) == (1, 1, 0)
    assert Query.objects.get(pool=pool, external_id="q1").information_need == "find the manual"
    assert Query.objects.get(pool=pool, external_id="301").text == "t"


def test_import_queries_with_a_bad_line_writes_nothing(pool):
    with pytest.raises(FormatError) as error:
        import_queries(pool, b"q7\tfine\nq8 no tab here\nq7\tagain\n", name="bad.tsv")
    assert _problems(error) == [(2, "line"), (3, "qid")]
    assert str(error.value).splitlines()[0] == "bad.tsv:2: line: expected 'query_id<TAB>text': no tab found"
    assert not Query.objects.filter(external_id__in=["q7", "q8"]).exists()


# --- Qrels -------------------------------------------------------------------------------------------

QRELS = b"q1 0 d1 2\nq1 0 d2 0\n# a comment\n\nq3 0 d9 4\n"


def test_import_qrels_creates_judgments_of_a_non_login_file_account(pool):
    summary = import_qrels(pool, QRELS, name="/tmp/some dir/run.qrels")
    assert summary.rater == "qrels:run.qrels"
    assert (summary.read, summary.created, summary.updated, summary.unchanged) == (3, 3, 0, 0)
    assert (summary.queries_created, summary.documents_created) == (1, 1)
    judgments = {
        (j.pair.query.external_id, j.pair.document.external_id): (j.grade, j.rater.username)
        for j in Judgment.objects.select_related("pair__query", "pair__document", "rater")
    }
    assert judgments == {
        ("q1", "d1"): (2, "qrels:run.qrels"),
        ("q1", "d2"): (0, "qrels:run.qrels"),
        ("q3", "d9"): (4, "qrels:run.qrels"),
    }
    account = Judgment.objects.first().rater
    assert not account.has_usable_password()
    assert Document.objects.get(pool=pool, external_id="d9").has_content is False
    assert JudgmentChange.objects.filter(action="created").count() == 3


def test_reimporting_qrels_by_the_same_rater_updates_changed_grades(pool, rater):
    import_qrels(pool, QRELS, name="a.qrels", rater=rater)
    summary = import_qrels(pool, b"q1 0 d1 3\nq1 0 d2 0\nq3 0 d9 4\n", name="a.qrels", rater=rater)
    assert (summary.created, summary.updated, summary.unchanged) == (0, 1, 2)
    assert Judgment.objects.count() == 3
    assert Judgment.objects.get(pair__query__external_id="q1", pair__document__external_id="d1").grade == 3
    change = JudgmentChange.objects.get(action="changed")
    assert (change.old_grade, change.new_grade, change.changed_by) == (2, 3, rater)


def test_import_qrels_records_the_actor_in_history(pool, rater, site_admin):
    import_qrels(pool, QRELS, name="a.qrels", rater=rater, actor=site_admin)
    assert set(JudgmentChange.objects.values_list("rater__username", "changed_by__username")) == {
        (rater.username, site_admin.username)
    }


def test_two_files_by_different_raters_keep_both_judgments(pool):
    import_qrels(pool, b"q1 0 d1 2\n", name="one.qrels")
    import_qrels(pool, b"q1 0 d1 3\n", name="two.qrels")
    assert sorted(Judgment.objects.values_list("rater__username", "grade")) == [
        ("qrels:one.qrels", 2),
        ("qrels:two.qrels", 3),
    ]
    assert Pair.objects.count() == 1


@pytest.mark.parametrize("grade", [b"5", b"-2", b"2.5", b"two"])
def test_import_qrels_refuses_grades_outside_0_to_4_and_writes_nothing(pool, grade):
    with pytest.raises(FormatError) as error:
        import_qrels(pool, b"q1 0 d1 2\nq1 0 d2 1\nq5 0 d7 " + grade + b"\n", name="x.qrels")
    assert _problems(error) == [(3, "grade")]
    assert str(error.value).startswith("x.qrels:3: grade: grade must be an integer 0-4")
    assert not Judgment.objects.exists()
    assert not Query.objects.filter(external_id="q5").exists()
    assert not Document.objects.filter(external_id="d7").exists()


def test_import_qrels_refuses_wrong_field_count_and_repeated_pair(pool):
    with pytest.raises(FormatError) as error:
        import_qrels(pool, b"q1 0 d1 2\nq1 0 d1\nq1 0 d1 3\n", name="x.qrels")
    assert _problems(error) == [(2, "line"), (3, "docid")]
    assert not Judgment.objects.exists()


def test_import_qrels_grade_map_translates_and_skips(pool):
    summary = import_qrels(
        pool, b"q1 0 d1 -2\nq1 0 d2 -1\nq1 0 d3 3\n", name="m.qrels", grade_map="-2:0,-1:skip"
    )
    assert summary.read == 2
    grades = dict(Judgment.objects.values_list("pair__document__external_id", "grade"))
    assert grades == {"d1": 0, "d3": 3}


def test_import_qrels_bad_grade_map_is_a_problem_of_the_file(pool):
    with pytest.raises(FormatError) as error:
        import_qrels(pool, QRELS, name="m.qrels", grade_map="-1:7")
    assert _problems(error) == [(0, "grade map")]
    assert not Judgment.objects.exists()


def test_import_qrels_announces_changed_pairs_after_commit(pool, rater, django_capture_on_commit_callbacks):
    received = []

    def receiver(sender, pool, pair_ids, **kwargs):
        received.append(sorted(pair_ids))

    grades_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            import_qrels(pool, b"q1 0 d1 2\nq1 0 d2 0\n", name="a.qrels", rater=rater)
        with django_capture_on_commit_callbacks(execute=True):
            import_qrels(pool, b"q1 0 d1 2\nq1 0 d2 1\n", name="a.qrels", rater=rater)
        with django_capture_on_commit_callbacks(execute=True):
            import_qrels(pool, b"q1 0 d1 2\nq1 0 d2 1\n", name="a.qrels", rater=rater)
    finally:
        grades_changed.disconnect(receiver)
    d1, d2 = (Pair.objects.get(document__external_id=d).pk for d in ("d1", "d2"))
    assert received == [sorted([d1, d2]), [d2]]  # the third import changed nothing


# --- Runs --------------------------------------------------------------------------------------------

# Scores tie at 5.0 for d1, d3 and d2; trec_eval breaks ties by docid descending; the rank column lies.
RUN = b"q1 Q0 d1 1 5.0 mytag\nq1 Q0 d3 2 5.0 mytag\nq1 Q0 d2 3 5.0 mytag\nq1 Q0 d4 4 9.5 mytag\nq2 Q0 d1 1 1 mytag\n"


def _ranking(run, qid):
    doc_ids = Ranking.objects.get(run=run, query__external_id=qid).doc_ids
    names = dict(Document.objects.filter(pk__in=doc_ids).values_list("pk", "external_id"))
    return [names[pk] for pk in doc_ids]


def test_import_run_orders_by_score_then_docid_descending_like_trec_eval(configuration, engineer):
    run = import_run(configuration, RUN, name="/runs/bm25.run", submitted_by=engineer)
    assert _ranking(run, "q1") == ["d4", "d3", "d2", "d1"]
    assert _ranking(run, "q2") == ["d1"]
    assert (run.tag, run.filename, run.source, run.submitted_by) == ("mytag", "bm25.run", "file", engineer)


def test_import_run_by_rank_column(configuration):
    run = import_run(configuration, RUN, name="bm25.run", order="rank", source=Run.Source.UPLOAD)
    assert _ranking(run, "q1") == ["d1", "d3", "d2", "d4"]
    assert run.source == "upload"


def test_import_run_with_a_document_twice_writes_nothing(configuration):
    with pytest.raises(FormatError) as error:
        import_run(
            configuration, b"q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\nq2 Q0 d1 1 x t\n", name="r.run"
        )
    assert _problems(error) == [(3, "docid"), (4, "score")]
    assert (
        str(error.value).splitlines()[0]
        == "r.run:3: docid: doc d1 is ranked twice for query q1 (lines 1 and 3)"
    )
    assert not Run.objects.exists()
    assert not Ranking.objects.exists()


def test_import_run_refuses_an_unknown_order(configuration):
    with pytest.raises(ValueError, match="order"):
        import_run(configuration, RUN, name="r.run", order="random")
