"""Stored counts the pages read instead of scanning a pool (judgments.tallies reads and rebuilds them).

Database triggers (migration 0020_submit_tallies) keep them current in the transaction of every write,
whatever path wrote it (the queue, imports by COPY, exclusions, adjudication, deletions):
- `Pair.human_grades`: the pair's grades that fill it (not can't judge, not excluded, not a model judge's);
- `Tally`: insert-only delta rows per pool, summed on read and folded now and then. A row with no rater
  carries the pool's counts (queued pairs, complete ones, open ones, documents); a row with a rater that
  rater's (grades, can't-judge answers, and how many of the pool's open pairs they judged). No writer ever
  updates a row, so 32 raters grading one pool never wait on a shared counter.
"""

from django.db import models


class Tally(models.Model):
    """One change of a pool's counts (rater None) or of one rater's counts in the pool. Sum them."""

    pool_id = models.BigIntegerField()  # no foreign key: rows are written by triggers while a pool goes
    rater_id = models.BigIntegerField(null=True, blank=True)
    pairs = models.IntegerField(default=0, db_default=0)
    queued = models.IntegerField(default=0, db_default=0)  # queued pairs
    complete = models.IntegerField(default=0, db_default=0)  # queued pairs with their grades or a final one
    open_pairs = models.IntegerField(default=0, db_default=0)  # queued, not complete, document with content
    documents = models.IntegerField(default=0, db_default=0)
    graded = models.IntegerField(default=0, db_default=0)  # the rater's judgments that are grades
    cant = models.IntegerField(default=0, db_default=0)  # the rater's can't-judge answers
    judged_open = models.IntegerField(default=0, db_default=0)  # open pairs the rater judged

    class Meta:
        indexes = [models.Index(fields=["pool_id", "rater_id"], name="tally_pool_rater_idx")]

    def __str__(self) -> str:
        return f"tally of pool {self.pool_id}" + (f", rater {self.rater_id}" if self.rater_id else "")
