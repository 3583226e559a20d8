"""Prediction-powered estimates on the real database: the app's random human sample (sample_queries),
the estimates of every configuration (export_estimates) against pytrec_eval's NDCG@10 per query and the
formula worked out here with numpy, and the refusals (no sample, an unfinished one, a sample larger than
the pool, a judge without grades)."""

import json

import numpy as np
import pytest
import pytrec_eval
from django.core.management import CommandError

from judgments import services
from judgments.judges.services import create_or_update_judge
from judgments.models import Document, HumanSample, Judgment, Pair, Query, SearchConfiguration
from judgments.rating.sample import sample_status
from tests.scoring.estimates.conftest import CONFIGURATIONS, N_QUERIES, run_command


def qrels_of(pool, rater_ids) -> dict:
    qrels = {}
    for j in Judgment.objects.filter(
        pair__pool=pool, rater_id__in=rater_ids, cant_judge=False
    ).select_related("pair__query", "pair__document"):
        qrels.setdefault(j.pair.query.external_id, {})[j.pair.document.external_id] = j.grade
    return qrels


def ndcg10_per_query(pool, qrels) -> dict[str, dict[str, float]]:
    """{configuration: {query: trec_eval ndcg_cut_10}} of every current run; a query not answered is 0."""
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    out = {}
    for configuration in SearchConfiguration.objects.filter(pool=pool):
        run = configuration.current_run
        trec_run = {
            r.query.external_id: {
                Document.objects.get(pk=d).external_id: float(100 - i) for i, d in enumerate(r.doc_ids)
            }
            for r in run.rankings.select_related("query")
        }
        scores = evaluator.evaluate(trec_run)
        out[configuration.name] = {
            q.external_id: scores.get(q.external_id, {}).get("ndcg_cut_10", 0.0)
            for q in Query.objects.filter(pool=pool)
        }
    return out


def test_sample_draws_records_and_queues(judged_pool, pool):
    out, err = run_command("sample_queries", "--pool", pool.name, "--size", "5", "--seed", "42")
    drawn = out.split()
    assert len(drawn) == 5 == len(set(drawn))
    sample = HumanSample.objects.get(pool=pool)
    assert sample.seed == 42 and sorted(sample.queries.values_list("external_id", flat=True)) == sorted(drawn)
    # The same seed on the same queries draws the same sample; another seed another one.
    again, err2 = run_command("sample_queries", "--pool", pool.name, "--size", "5", "--seed", "42")
    assert again.split() == drawn and "replaced" in err2
    other, _ = run_command("sample_queries", "--pool", pool.name, "--size", "5", "--seed", "44")
    assert other.split() != drawn
    assert HumanSample.objects.count() == 1  # replaced, never two


def test_sample_queues_the_pairs_of_its_queries_ahead_of_the_rest(pool, rater, team):
    docs = [Document.objects.create(pool=pool, external_id=f"e{d}", title="t", body="b") for d in range(4)]
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="c")
    services.record_run(configuration, {"q1": ["e0", "e1", "e2"], "q2": ["e3", "e0"]}, source="api")
    Pair.objects.create(pool=pool, query=Query.objects.get(pool=pool, external_id="q2"), document=docs[2])
    out, err = run_command("sample_queries", "--pool", pool.name, "--size", "1", "--seed", "1")
    sampled = out.strip()
    queued = Pair.objects.filter(pool=pool, queued_at__isnull=False)
    assert set(queued.values_list("query__external_id", flat=True)) == {sampled}
    expected = {"q1": {"e0", "e1", "e2"}, "q2": {"e3", "e0", "e2"}}[sampled]
    assert set(queued.values_list("document__external_id", flat=True)) == expected
    assert all(p >= 100_000_000 for p in queued.values_list("priority", flat=True))
    status = sample_status(pool)
    assert (status.size, status.n_complete, status.open_pairs) == (1, 0, len(expected))


def test_estimates_equal_the_formula_over_trec_eval_values(judged_pool, pool, rater):
    drawn, _ = run_command("sample_queries", "--pool", pool.name, "--size", "6", "--seed", "7")
    out, _ = run_command(
        "export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "nDCG@10", "--flavor", "trec"
    )
    lines = [json.loads(line) for line in out.splitlines()]
    assert {line["configuration"] for line in lines} == set(CONFIGURATIONS)
    model = ndcg10_per_query(pool, qrels_of(pool, [judged_pool.user_id]))
    human = ndcg10_per_query(pool, qrels_of(pool, [rater.pk]))
    sampled = drawn.split()
    queries = sorted(model["bm25"])
    assert len(queries) == N_QUERIES
    for line in lines:
        m = np.array([model[line["configuration"]][q] for q in queries])
        h_s = np.array([human[line["configuration"]][q] for q in sampled])
        m_s = np.array([model[line["configuration"]][q] for q in sampled])
        theta = m.mean() + (h_s - m_s).mean()
        half = 1.959964 * np.sqrt(m.var(ddof=1) / len(m) + (h_s - m_s).var(ddof=1) / len(h_s))
        assert set(line) == {
            "configuration",
            "metric",
            "estimate",
            "ci_low",
            "ci_high",
            "naive",
            "human_queries",
            "queries",
        }
        assert line["metric"] == "ndcg@10"
        assert line["estimate"] == pytest.approx(theta, abs=1e-9)
        assert line["ci_low"] == pytest.approx(theta - half, abs=1e-9)
        assert line["ci_high"] == pytest.approx(theta + half, abs=1e-9)
        assert line["naive"] == pytest.approx(m.mean(), abs=1e-9)
        assert (line["human_queries"], line["queries"]) == (6, N_QUERIES)


def test_refusals(judged_pool, pool, rater):
    with pytest.raises(CommandError, match="no human sample"):
        run_command("export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "ndcg@10")
    with pytest.raises(CommandError, match="larger than the pool"):
        run_command("sample_queries", "--pool", pool.name, "--size", str(N_QUERIES + 3))
    assert not HumanSample.objects.exists()
    run_command("sample_queries", "--pool", pool.name, "--size", "4", "--seed", "3")
    with pytest.raises(CommandError, match="Unknown measure 'ndcg@11'"):
        run_command("export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "ndcg@11")
    with pytest.raises(CommandError, match="no judge named 'nobody'"):
        run_command("export_estimates", "--pool", pool.name, "--judge", "nobody", "--measure", "ndcg@10")
    # A sampled query loses a human grade: the sample is unfinished and no estimate is made.
    sampled = HumanSample.objects.get(pool=pool).queries.first()
    lost = Judgment.objects.filter(pair__query=sampled, rater=rater).first()
    pair, grade = lost.pair, lost.grade
    lost.delete()
    with pytest.raises(CommandError, match="not finished: 3 of 4 sampled queries"):
        run_command("export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "ndcg@10")
    Judgment.objects.create(pair=pair, rater=rater, grade=grade)
    run_command("export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "ndcg@10")
    # A judge without grades.
    create_or_update_judge(pool, "idle", base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(CommandError, match="Judge idle has no grades"):
        run_command("export_estimates", "--pool", pool.name, "--judge", "idle", "--measure", "ndcg@10")


def test_estimates_in_ir_measures_names_equal_the_formula_over_ir_measures(judged_pool, pool, rater):
    import ir_measures

    drawn, _ = run_command("sample_queries", "--pool", pool.name, "--size", "5", "--seed", "11")
    out, _ = run_command("export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "P(rel=3)@5")
    lines = [json.loads(line) for line in out.splitlines()]
    assert {line["metric"] for line in lines} == {"P(rel=3)@5"}
    measure = ir_measures.parse_measure("P(rel=3)@5")

    def values(qrels):
        out = {}
        for configuration in SearchConfiguration.objects.filter(pool=pool):
            run = configuration.current_run
            trec_run = {
                r.query.external_id: {
                    Document.objects.get(pk=d).external_id: float(100 - i) for i, d in enumerate(r.doc_ids)
                }
                for r in run.rankings.select_related("query")
            }
            found = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, trec_run)}
            out[configuration.name] = {
                q.external_id: found.get(q.external_id, 0.0) for q in Query.objects.filter(pool=pool)
            }
        return out

    model = values(qrels_of(pool, [judged_pool.user_id]))
    human = values(qrels_of(pool, [rater.pk]))
    sampled, queries = drawn.split(), sorted(model["bm25"])
    for line in lines:
        m = np.array([model[line["configuration"]][q] for q in queries])
        d = np.array([human[line["configuration"]][q] - model[line["configuration"]][q] for q in sampled])
        assert line["estimate"] == pytest.approx(m.mean() + d.mean(), abs=1e-9)
    with pytest.raises(CommandError, match="rel must be a grade"):
        run_command("export_estimates", "--pool", pool.name, "--judge", "llm", "--measure", "P(rel=9)@5")
