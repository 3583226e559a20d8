"""Score downloads for the web and the API, streamed from the stored `QueryScore` rows.

- `trec_eval_q_lines(run, flavour)`: `trec_eval -q` style text for one run: for each graded query
  (by id) the measures map, recip_rank, P_k, recall_k, ndcg_cut_k, then the "all" lines (runid,
  num_q and the means). With flavour "trec" the numbers are trec_eval's `-c -m ...` values.
- `score_lines(pool, flavour, fmt)`: the rows of `manage.py export_scores` (JSON lines or CSV): one per
  (configuration, query, metric) of each current run, then the "all" means; one flavour or several.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from itertools import groupby

from django.db.models import Avg, Count

from judgments.exchange import formats
from judgments.exchange.exports import run_tag
from judgments.exchange.formats.spreadsheet import csv_line, csv_lines
from judgments.models import Pool, Run

from . import metrics
from .leaderboard import configuration_means
from .models import JUDGED_FIELDS, MEAN_FIELDS, METRIC_FIELDS, QueryScore

# trec_eval's measure names, in the order trec_eval prints them.
TREC_EVAL_NAMES: dict[str, str] = {
    "ap": "map",
    "mrr": "recip_rank",
    **{f"p@{k}": f"P_{k}" for k in metrics.CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in metrics.CUTOFFS},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in metrics.CUTOFFS},
}
SCORE_FORMATS = ("jsonl", "csv")
COLUMNS = ("configuration", "query", "flavor", "metric", "value", "judged")


def _check_flavour(flavour: str) -> None:
    if flavour not in metrics.FLAVOURS:
        raise ValueError(f"unknown flavour {flavour!r}; expected one of {', '.join(metrics.FLAVOURS)}")


def trec_eval_q_filename(run: Run, flavour: str) -> str:
    return f"{run.configuration.pool.name}.{run.configuration.name}.run{run.pk}.{flavour}.trec_eval"


def trec_eval_q_lines(run: Run, flavour: str = "trec") -> Iterator[str]:
    """`trec_eval -q` lines of the run's stored scores in `flavour`."""
    _check_flavour(flavour)
    columns = [METRIC_FIELDS[m] for m in TREC_EVAL_NAMES]
    rows = (
        QueryScore.objects.filter(run=run, flavor=flavour)
        .order_by("query__external_id")
        .values_list("query__external_id", *columns)
        .iterator(chunk_size=2000)
    )

    def lines() -> Iterator[tuple[str, str, object]]:
        for qid, *values in rows:
            for name, value in zip(TREC_EVAL_NAMES.values(), values, strict=True):
                yield name, qid, value
        means = QueryScore.objects.filter(run=run, flavor=flavour).aggregate(
            n=Count("id"), **{m: Avg(METRIC_FIELDS[m]) for m in TREC_EVAL_NAMES}
        )
        yield "runid", "all", run_tag(run)
        yield "num_q", "all", means.pop("n")
        for metric, name in TREC_EVAL_NAMES.items():
            yield name, "all", means[metric] if means[metric] is not None else 0.0

    return _blocks(formats.write_trec_eval_q(lines()))


def _blocks(lines: Iterator[str], size: int = 1000) -> Iterator[str]:
    block: list[str] = []
    for line in lines:
        block.append(line)
        if len(block) >= size:
            yield "".join(block)
            block.clear()
    if block:
        yield "".join(block)


def judged_metric(metric: str) -> str | None:
    """The judged@k that goes with a metric cut at k (None for mrr and ap)."""
    _, at, k = metric.partition("@")
    return f"judged@{k}" if at else None


def score_lines(
    pool: Pool, flavour: str | Sequence[str] = metrics.DEFAULT_FLAVOUR, fmt: str = "jsonl"
) -> Iterator[str]:
    """Every stored score of each configuration's current run, as `manage.py export_scores` prints them:
    by configuration name, flavour (one, or each of a sequence of flavours) and query id, the "all" means
    after each configuration's queries in a flavour; CSV has one header."""
    flavours = [flavour] if isinstance(flavour, str) else list(flavour)
    for name in flavours:
        _check_flavour(name)
    if fmt not in SCORE_FORMATS:
        raise ValueError(f"format must be one of {SCORE_FORMATS}, not {fmt!r}")
    means = {
        name: {m.configuration.name: m.current.means for m in configuration_means(pool, name) if m.current}
        for name in flavours
    }
    names = [*metrics.METRICS, *metrics.UDCG, *metrics.JUDGED]
    fields = [MEAN_FIELDS[m] for m in (*metrics.METRICS, *metrics.UDCG)] + [
        JUDGED_FIELDS[m] for m in metrics.JUDGED
    ]
    rows = (
        QueryScore.objects.current()
        .filter(run__configuration__pool=pool, flavor__in=flavours)
        .order_by("run__configuration__name", "flavor", "query__external_id")
        .values_list("run__configuration__name", "flavor", "query__external_id", *fields)
        .iterator(chunk_size=2000)
    )

    def records() -> Iterator[tuple]:
        for (configuration, name), group in groupby(rows, key=lambda row: row[:2]):
            for _, _, query, *values in group:
                yield from _metric_rows(configuration, query, name, dict(zip(names, values, strict=True)))
            yield from _metric_rows(configuration, "all", name, means[name][configuration])

    if fmt == "jsonl":
        return _blocks(json.dumps(dict(zip(COLUMNS, row, strict=True))) + "\n" for row in records())
    return _blocks(_csv_lines(records()))


def _metric_rows(configuration: str, query: str, flavour: str, values: dict) -> Iterator[tuple]:
    for metric in (*metrics.METRICS, *metrics.UDCG):
        judged = judged_metric(metric)
        yield configuration, query, flavour, metric, values[metric], values[judged] if judged else None


def _csv_lines(rows: Iterator[tuple]) -> Iterator[str]:
    """Spreadsheet-bound: the one CSV writer, which guards cells against formulas."""
    yield csv_line(COLUMNS)
    yield from csv_lines(rows)
