"""manage.py export_estimates --pool P --judge NAME --measure M [--flavor F] [--format jsonl|csv]

Prediction-powered estimates (scoring.estimates) of every configuration's current run: one line each
with configuration, metric, estimate, ci_low, ci_high, naive, human_queries, queries. Fails with one
line when the pool's human sample is not finished or the judge has no grades.
"""

from __future__ import annotations

import csv
import json
import math

from django.core.management.base import CommandError

from judgments.exchange.cli import ExchangeCommand, get_pool
from judgments.models import ModelJudge
from scoring.estimates import EstimateError, estimates
from scoring.flavours import DEFAULT_FLAVOUR, FLAVOURS

KEYS = ("configuration", "metric", "estimate", "ci_low", "ci_high", "naive", "human_queries", "queries")


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


class Command(ExchangeCommand):
    help = (
        "Print prediction-powered estimates of each configuration's mean from a model judge's grades "
        "on every query, corrected by the humans' grades on the pool's random sample of queries."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--judge", required=True, help="the model judge's name")
        parser.add_argument("--measure", default="ndcg@10", help="e.g. ndcg@10 or nDCG@10 (default ndcg@10)")
        parser.add_argument(
            "--flavor", "--flavour", dest="flavor", default=DEFAULT_FLAVOUR, choices=list(FLAVOURS)
        )
        parser.add_argument("--format", default="jsonl", choices=("jsonl", "csv"))

    def handle(self, *args, pool, judge, measure, flavor, format, **options):
        found = get_pool(pool)
        the_judge = ModelJudge.objects.filter(pool=found, user__username=judge).select_related("user").first()
        if the_judge is None:
            names = list(ModelJudge.objects.filter(pool=found).values_list("user__username", flat=True))
            known = f"its judges are {', '.join(names)}" if names else "it has no model judge"
            raise CommandError(f"Pool {found.name} has no judge named {judge!r}: {known}.")
        try:
            table = estimates(found, the_judge, measure, flavor)
        except EstimateError as error:
            raise CommandError(str(error)) from None
        lines = [
            {
                "configuration": row.configuration.name,
                "metric": table.measure,
                "estimate": _number(row.estimate.estimate),
                "ci_low": _number(row.estimate.ci_low),
                "ci_high": _number(row.estimate.ci_high),
                "naive": _number(row.estimate.naive),
                "human_queries": row.estimate.human_queries,
                "queries": row.estimate.queries,
            }
            for row in table.rows
        ]
        if format == "csv":
            writer = csv.DictWriter(self.stdout, fieldnames=KEYS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(lines)
        else:
            for line in lines:
                self.stdout.write(json.dumps(line))
