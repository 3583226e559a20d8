"""The adaptive queue strategy: pairs likely to be relevant first, re-decided as every grade arrives.

After Losada, Parapar & Barreiro, "Feeling lucky? Multi-armed bandits for ordering judgements in
pooling-based evaluation" (2016) and "Multi-armed bandits for adjudicating documents in pooling-based
evaluation of information retrieval systems" (Information Processing & Management 53(5), 2017). They
adjudicate a query's pool as a bandit whose arms are the runs: **MaxMean** (MM) pulls the run with the
highest posterior mean of relevance, Beta(1 + relevant, 1 + non-relevant) over the run's judged documents,
and judges its next unjudged document; **MM-NS**, the non-stationary variant, lets older evidence fade, so
a run whose documents stop being relevant as it goes deeper loses its turn quickly.

A plain MaxMean over runs does not beat depth pooling's order, which already puts first the documents that
many configurations retrieve (the issue said so, and the simulation in tests/bench/bench_adaptive agrees).
So the two are combined, per query:

- each run r of the query gets its MM-NS estimate p_r: walking its top k in rank order, every judged
  document adds its reward (1: relevant, combined grade >= 1) to discounted counts,
  rel <- GAMMA * rel + reward and n <- GAMMA * n + 1, and p_r = (1 + rel) / (2 + n);
- an unjudged document d retrieved by runs R(d) at ranks rank_r(d) is relevant with probability
  1 - prod over r in R(d) of (1 - max(p_r, FLOOR) x w(rank_r(d))): the bandit's estimate of each run that
  retrieves it, damped by how deep it ranks it, and the more runs retrieve it the higher it goes (depth
  pooling's priority, weighted by what each run has shown so far);
- w(rank) = 1 / log2(rank + 1), times DEEP below the leaderboard's cutoff (rank > CUTOFF = 10): a document
  only a deep rank retrieves cannot change anyone's nDCG@10 but through the ideal ranking. FLOOR keeps a
  weak run's top documents from being starved: the leaderboard needs every configuration's top 10 judged
  (judged@10) before it can be trusted, and a run that finds little is still a run to be ranked.
  GAMMA, DEEP and FLOOR were chosen on the simulation (docs/campaigns.md): DEEP 0.3 and FLOOR 0.2 settled
  the leaderboard ~10 % sooner than 1 and 0 and cost ~5 % more grades to find 90 % of the relevant ones.

The priority stored on the pair is that probability x 1,000,000. `refresh_query` recomputes one query's
priorities after each grade (`grading.save_grade` calls it: the decision is re-made as every grade
arrives); `pool_priorities` computes every query's for `queue.build_queue`. How raters are served from
these priorities (in coarse tiers, shuffled within a tier, so the order reveals no rank) is `grading`.
"""

from __future__ import annotations

import math
from collections import defaultdict

from django.db import connection

from judgments.models import Pool

GAMMA = 0.8  # MM-NS: the weight an earlier judged document of a run keeps after each later one
CUTOFF = 10  # the leaderboard's nDCG@10
DEEP = 0.3  # weight of a rank below CUTOFF
FLOOR = 0.2  # lowest run estimate used
SCALE = 1_000_000  # priority = probability of relevance x SCALE
RELEVANT = 1.0  # relevant: combined grade >= 1 (trec_eval's -l1, as scoring)

# Every current run's top-k entries of the pool (or of one query), with each pooled pair's grades: the
# mean of its human grades (a model judge's do not count, nor "can't judge"), or the final grade.
_ENTRIES_SQL = """
    WITH runs AS (
        SELECT r.id FROM judgments_run r JOIN judgments_searchconfiguration c ON c.id = r.configuration_id
        WHERE c.pool_id = %(pool)s
          AND NOT EXISTS (SELECT 1 FROM judgments_run n WHERE n.configuration_id = r.configuration_id AND n.id > r.id)
    ),
    entries AS (
        SELECT rk.run_id, rk.query_id, t.doc_id, t.rank
        FROM judgments_ranking rk JOIN runs ON runs.id = rk.run_id
        CROSS JOIN LATERAL unnest(rk.doc_ids[1:%(k)s]) WITH ORDINALITY AS t(doc_id, rank)
        WHERE %(query)s::bigint IS NULL OR rk.query_id = %(query)s
    )
    SELECT e.run_id, e.query_id, e.doc_id, e.rank, p.id,
           COALESCE(p.final_grade::float8, (
               SELECT avg(j.grade) FROM judgments_judgment j
               WHERE j.pair_id = p.id AND NOT j.cant_judge AND NOT j.excluded
                 AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = j.rater_id)
           )) AS grade
    FROM entries e
    LEFT JOIN judgments_pair p ON p.query_id = e.query_id AND p.document_id = e.doc_id
    ORDER BY e.query_id, e.run_id, e.rank
"""


def run_estimate(rewards: list[float]) -> float:
    """MM-NS posterior mean of one run from its judged documents' rewards (1/0) in rank order."""
    rel = n = 0.0
    for reward in rewards:
        rel = GAMMA * rel + reward
        n = GAMMA * n + 1.0
    return (1.0 + rel) / (2.0 + n)


def document_probability(estimates_and_ranks: list[tuple[float, int]]) -> float:
    """Probability that a document is relevant, from (run estimate, rank) of every run retrieving it."""
    miss = 1.0
    for estimate, rank in estimates_and_ranks:
        weight = (1.0 if rank <= CUTOFF else DEEP) / math.log2(rank + 1)
        miss *= 1.0 - max(estimate, FLOOR) * weight
    return 1.0 - miss


def _priorities(rows) -> dict[int, int]:
    """{pair id: priority} of the pooled pairs, from _ENTRIES_SQL rows (one query or many). A pair with
    some of its grades (raters_per_pair > 1) gets its priority as if unjudged; a complete one is not open."""
    by_query: dict[int, dict[int, list[tuple[int, int, int | None, float | None]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run_id, query_id, doc_id, rank, pair_id, grade in rows:
        by_query[query_id][run_id].append((doc_id, rank, pair_id, grade))
    priorities: dict[int, int] = {}
    for runs in by_query.values():
        retrieved: dict[int, list[tuple[float, int]]] = defaultdict(list)
        pair_of: dict[int, int] = {}
        for entries in runs.values():
            rewards = [float(grade >= RELEVANT) for _, _, _, grade in entries if grade is not None]
            estimate = run_estimate(rewards)
            for doc_id, rank, pair_id, _grade in entries:
                if pair_id is not None:
                    retrieved[doc_id].append((estimate, rank))
                    pair_of[doc_id] = pair_id
        for doc_id, found in retrieved.items():
            priorities[pair_of[doc_id]] = round(SCALE * document_probability(found))
    return priorities


def _rows(pool: Pool, k: int, query_id: int | None):
    with connection.cursor() as cursor:
        cursor.execute(_ENTRIES_SQL, {"pool": pool.pk, "k": k, "query": query_id})
        return cursor.fetchall()


def pool_priorities(pool: Pool, k: int) -> dict[int, int]:
    """{pair id: priority} for every pooled pair of the pool's top k (pairs must exist already)."""
    return _priorities(_rows(pool, k, None))


def refresh_query(pool: Pool, query_id: int) -> int:
    """Re-decide one query's queued pairs after a grade: their new priorities, written without waiting for
    a row another transaction holds (it is being served or graded right now; it keeps its priority). Runs
    inside the grade's transaction. Returns how many pairs changed."""
    priorities = _priorities(_rows(pool, pool.queue_depth, query_id))
    if not priorities:
        return 0
    ids = list(priorities)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH wanted AS (SELECT * FROM unnest(%(ids)s::bigint[], %(prios)s::int[]) AS w(id, priority)),
            free AS (
                SELECT p.id FROM judgments_pair p JOIN wanted w ON w.id = p.id
                WHERE p.queued_at IS NOT NULL AND p.priority <> w.priority
                ORDER BY p.id FOR UPDATE OF p SKIP LOCKED
            )
            UPDATE judgments_pair p SET priority = w.priority
            FROM wanted w JOIN free ON free.id = w.id WHERE p.id = w.id
            """,
            {"ids": ids, "prios": [priorities[i] for i in ids]},
        )
        return cursor.rowcount
