"""Stored scores: one row per (run, query, flavour) with every metric, kept current incrementally.

A row exists for every run and every query of its pool that has at least one grade, whether or not the
run ranked that query (has_ranking=False rows score 0, as `trec_eval -c`). A configuration's mean is
then a plain AVG over its current run's rows, which the leaderboard reads; nothing recomputes on page load.
"""

from django.db import models

from judgments.models import Query, Run

FLAVOUR_CHOICES = [
    ("exp", "exp: gain 2^g−1, discount log2(i+1), unjudged = 0"),
    ("trec", "trec: gain g, discount log2(i+1), unjudged = 0 (trec_eval -c)"),
    ("jk", "jk: gain g, Järvelin–Kekäläinen discount, unjudged = 0"),
    ("judged", "judged: gain g, discount log2(i+1), unjudged removed (trec_eval -c -J)"),
]

# metric name (as in exports and the API) -> column
METRIC_FIELDS = {
    "ndcg@3": "ndcg_3",
    "ndcg@5": "ndcg_5",
    "ndcg@10": "ndcg_10",
    "ndcg@100": "ndcg_100",
    "p@3": "p_3",
    "p@5": "p_5",
    "p@10": "p_10",
    "p@100": "p_100",
    "recall@3": "recall_3",
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "mrr": "mrr",
    "ap": "ap",
}
JUDGED_FIELDS = {
    "judged@3": "judged_3",
    "judged@5": "judged_5",
    "judged@10": "judged_10",
    "judged@100": "judged_100",
}


class QueryScoreQuerySet(models.QuerySet):
    def current(self):
        """Scores of each configuration's newest run."""
        return self.filter(run__in=Run.objects.current())

    def flavour(self, name: str):
        return self.filter(flavor=name)


class QueryScore(models.Model):
    run = models.ForeignKey(Run, models.CASCADE, related_name="scores")
    query = models.ForeignKey(Query, models.CASCADE, related_name="scores")
    flavor = models.CharField(max_length=10, choices=FLAVOUR_CHOICES)
    has_ranking = models.BooleanField(help_text="False: the run has no ranking for this query; it scores 0")
    has_relevant = models.BooleanField(help_text="False: no judged document of this query is relevant")
    ndcg_3 = models.FloatField()
    ndcg_5 = models.FloatField()
    ndcg_10 = models.FloatField()
    ndcg_100 = models.FloatField()
    p_3 = models.FloatField()
    p_5 = models.FloatField()
    p_10 = models.FloatField()
    p_100 = models.FloatField()
    recall_3 = models.FloatField()
    recall_5 = models.FloatField()
    recall_10 = models.FloatField()
    recall_100 = models.FloatField()
    mrr = models.FloatField()
    ap = models.FloatField()
    judged_3 = models.FloatField()
    judged_5 = models.FloatField()
    judged_10 = models.FloatField()
    judged_100 = models.FloatField()
    updated_at = models.DateTimeField(auto_now=True)

    objects = QueryScoreQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "flavor", "query"], name="one_score_per_run_flavor_query"),
        ]
        indexes = [models.Index(fields=["query", "flavor"], name="score_query_flavor_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} query {self.query_id} [{self.flavor}] ndcg@10={self.ndcg_10:.4f}"
