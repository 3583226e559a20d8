"""`manage.py export_scores --pool P [--flavor F] [--format jsonl|csv] > scores.jsonl`

One row per (configuration, query, metric) of each configuration's current run, then one row per
(configuration, metric) with query "all": the mean over every graded query of the pool (a query the
run has no ranking for counts 0). `judged` is judged@k for a metric cut at k, and null (empty in CSV)
for mrr and ap, which look at the whole ranking. Values are not rounded.
"""

import io
import json
from itertools import groupby

from judgments.exchange.cli import ExchangeCommand, get_pool
from judgments.exchange.formats.spreadsheet import csv_line
from scoring import metrics
from scoring.leaderboard import configuration_means
from scoring.models import JUDGED_FIELDS, METRIC_FIELDS, QueryScore

COLUMNS = ("configuration", "query", "flavor", "metric", "value", "judged")


def judged_metric(metric: str) -> str | None:
    """The judged@k that goes with a metric cut at k (None for mrr and ap)."""
    _, at, k = metric.partition("@")
    return f"judged@{k}" if at else None


class Command(ExchangeCommand):
    help = (
        "Print the stored scores of each configuration's current run, per query and as means (query 'all')."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument(
            "--flavor",
            default=metrics.DEFAULT_FLAVOUR,
            choices=[*metrics.FLAVOURS, "all"],
            help=f"NDCG flavour (default {metrics.DEFAULT_FLAVOUR}; 'all' for every flavour)",
        )
        parser.add_argument("--format", default="jsonl", choices=["jsonl", "csv"], help="output format")

    def handle(self, *args, pool, flavor, format, **options):
        found = get_pool(pool)
        flavours = list(metrics.FLAVOURS) if flavor == "all" else [flavor]
        means = {
            flavour: {m.configuration.name: m.current for m in configuration_means(found, flavour)}
            for flavour in flavours
        }
        fields = [METRIC_FIELDS[m] for m in metrics.METRICS] + [JUDGED_FIELDS[m] for m in metrics.JUDGED]
        names = list(metrics.METRICS) + list(metrics.JUDGED)
        rows = (
            QueryScore.objects.current()
            .filter(run__configuration__pool=found, flavor__in=flavours)
            .order_by("run__configuration__name", "flavor", "query__external_id")
            .values_list("run__configuration__name", "flavor", "query__external_id", *fields)
            .iterator(chunk_size=2000)
        )
        write = self._writer(format)
        for (configuration, flavour), group in groupby(rows, key=lambda row: row[:2]):
            for _, _, query, *values in group:
                write(configuration, query, flavour, dict(zip(names, values, strict=True)))
            write(configuration, "all", flavour, means[flavour][configuration].means)

    def _writer(self, format):
        if format == "csv":  # spreadsheet-bound: the one CSV writer, guarded against formulas
            buffer = io.StringIO()
            buffer.write(csv_line(COLUMNS))

            def emit(row):
                buffer.write(csv_line(row))
        else:
            buffer = None

            def emit(row):
                self.stdout.write(json.dumps(dict(zip(COLUMNS, row, strict=True))))

        def write(configuration, query, flavour, values):
            for metric in metrics.METRICS:
                judged = judged_metric(metric)
                emit(
                    (
                        configuration,
                        query,
                        flavour,
                        metric,
                        values[metric],
                        values[judged] if judged else None,
                    )
                )
            if buffer is not None:
                self.stdout.write(buffer.getvalue(), ending="")
                buffer.seek(0)
                buffer.truncate()

        if buffer is not None:
            self.stdout.write(buffer.getvalue(), ending="")
            buffer.seek(0)
            buffer.truncate()
        return write
