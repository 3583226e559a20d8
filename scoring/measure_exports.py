"""`export_scores` and the score downloads for a pool with its own measure set (scoring.measure_sets): one
line per (configuration, query, measure) of each configuration's current run, then one per (configuration,
measure) with query "all" (the mean over every graded query; unranked ones count 0). Keys as for the fixed
set: configuration, query, flavor, metric, value, judged; "metric" is the canonical ir_measures name, and
"judged" is Judged@k of the measure's cut-off k (null for a measure without one). The values do not depend
on the flavour (a measure's name says how it is computed): "flavor" repeats the flavour asked for."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence

from django.db.models import Max

from judgments.models import Pool, Run

from .measure_reads import query_ids_by_pk, run_values
from .measures.compute import columns, judged_column
from .measures.names import Measure


def current_runs(pool: Pool) -> list[tuple[str, int]]:
    """(configuration name, current run id) in name order, for configurations with a run."""
    newest = (
        Run.objects.filter(configuration__pool=pool)
        .values("configuration__name")
        .annotate(run_id=Max("id"))
        .order_by("configuration__name")
    )
    return [(row["configuration__name"], row["run_id"]) for row in newest]


def _number(value: float | None) -> str:
    if value is None:
        return "null"
    return json.dumps(float(value)) if math.isfinite(value) else json.dumps(float(value))


def measure_score_blocks(
    pool: Pool, measures: Sequence[Measure], flavours: Sequence[str], fmt: str, query_ids=None
) -> Iterator[bytes]:
    """The lines of every (configuration, query, measure), then each configuration's means (query "all"),
    over the queries of `query_ids` only when given (a segment: scoring.segments)."""
    from judgments.exchange.formats.spreadsheet import (
        csv_line as _csv_line,
    )  # the one CSV writer (formula guard)

    names = columns(measures)
    index = {name: i for i, name in enumerate(names)}
    judged_at = [None if judged_column(m) is None else index[judged_column(m)] for m in measures]
    if fmt == "csv":
        yield _csv_line(("configuration", "query", "flavor", "metric", "value", "judged")).encode()
    runs = current_runs(pool)
    stored = run_values([run_id for _, run_id in runs], measures, query_ids)
    external = query_ids_by_pk({int(q) for rows in stored.values() for q in rows.query})
    metric_json = [json.dumps(m.name) for m in measures]
    for configuration, run_id in runs:
        rows = stored.get(run_id)
        if rows is None:
            continue
        order = sorted(range(len(rows.query)), key=lambda i: external[int(rows.query[i])])
        means = rows.values.mean(axis=0)
        for flavour in sorted(set(flavours)):
            block: list[str] = []
            if fmt == "jsonl":
                head = f'{{"configuration": {json.dumps(configuration)}, "query": '
                middle = f', "flavor": {json.dumps(flavour)}, "metric": '
                for i in [*order, None]:
                    values = means if i is None else rows.values[i]
                    qid = json.dumps("all" if i is None else external[int(rows.query[i])])
                    for j, metric in enumerate(metric_json):
                        judged = None if judged_at[j] is None else values[judged_at[j]]
                        block.append(
                            f'{head}{qid}{middle}{metric}, "value": {_number(values[j])}, "judged": {_number(judged)}}}\n'
                        )
                    if len(block) >= 5000:
                        yield "".join(block).encode()
                        block.clear()
            else:
                for i in [*order, None]:
                    values = means if i is None else rows.values[i]
                    qid = "all" if i is None else external[int(rows.query[i])]
                    for j, measure in enumerate(measures):
                        judged = None if judged_at[j] is None else float(values[judged_at[j]])
                        block.append(
                            _csv_line((configuration, qid, flavour, measure.name, float(values[j]), judged))
                        )
            yield "".join(block).encode()
