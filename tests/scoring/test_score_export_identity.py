"""export_scores' lines, written by PostgreSQL, are byte for byte those of the Python writer they replaced.

The reference is the previous `score_lines` (one ORM query, `json.dumps` or the spreadsheet CSV writer per
line), kept here verbatim in substance. The pool holds what can go wrong: configuration names and query
ids with quotes, backslashes, commas, non-ASCII and control characters, formula starts for the CSV guard;
values that PostgreSQL's float text writes differently from Python's repr (integral, tiny, huge, NaN,
infinities, -0.0); a configuration with an older run; queries a run has no score row for.
"""

import json
import random
from io import StringIO
from itertools import groupby

import pytest
from django.core.management import call_command

from judgments.exchange.formats.spreadsheet import csv_line, csv_lines
from judgments.models import Pool, Query, Run, SearchConfiguration, Team
from scoring import exports, flavours
from scoring.exports import COLUMNS, judged_metric
from scoring.leaderboard import configuration_means
from scoring.models import CELL_VALUE_COLUMNS, JUDGED_FIELDS, MEAN_FIELDS, CellScore, QueryScore

QUERY_IDS = [
    "q1", "q10", "q2", 'Q"quote"', "back\\slash", "ünïcode", "=cmd|'/C_calc'!A0", "-1", "-x", "+x", "@sum",
    "a,b", "'=x", "''-a", "'til", "日本語", "emoji😀", "ctl\x01x", "del\x7f", "/slash", "{}[]", "\\n",
]  # fmt: skip
CONFIGURATIONS = ["bm25", '=HYPERLINK("x")', "ünï,name", 'quo"te', "back\\slash", "-0.5", "zz"]
SPECIAL = [
    0.0, -0.0, 1.0, 0.5, 1e-4, 9.999999999999999e-05, 1e-5, 1e-300, 5e-324, 0.1, 1 / 3, 2 / 3, 100.0,
    123456789.0, 1e14, 999999999999999.9, 1.5e15, 1e15, 1e16, 3.5272318691850632e16, 1e300,
    float("nan"), float("inf"), float("-inf"), -0.25,
]  # fmt: skip


def reference_lines(pool, flavour, fmt):
    """The previous score_lines: one query, groupby, json.dumps or csv_line per line."""
    names_of = [flavour] if isinstance(flavour, str) else list(flavour)
    means = {
        name: {m.configuration.name: m.current.means for m in configuration_means(pool, name) if m.current}
        for name in names_of
    }
    names = [*flavours.METRICS, *flavours.UDCG, *flavours.JUDGED]
    fields = [MEAN_FIELDS[m] for m in (*flavours.METRICS, *flavours.UDCG)] + [
        JUDGED_FIELDS[m] for m in flavours.JUDGED
    ]
    rows = (
        QueryScore.objects.current()
        .filter(run__configuration__pool=pool, flavor__in=names_of)
        .order_by("run__configuration__name", "flavor", "query__external_id")
        .values_list("run__configuration__name", "flavor", "query__external_id", *fields)
    )

    def metric_rows(configuration, query, name, values):
        for metric in (*flavours.METRICS, *flavours.UDCG):
            judged = judged_metric(metric)
            yield configuration, query, name, metric, values[metric], values[judged] if judged else None

    def records():
        for (configuration, name), group in groupby(rows, key=lambda row: row[:2]):
            for _, _, query, *values in group:
                yield from metric_rows(configuration, query, name, dict(zip(names, values, strict=True)))
            yield from metric_rows(configuration, "all", name, means[name][configuration])

    if fmt == "jsonl":
        return "".join(json.dumps(dict(zip(COLUMNS, row, strict=True))) + "\n" for row in records())
    return csv_line(COLUMNS) + "".join(csv_lines(records()))


def _value(rng, special_share):
    if rng.random() < special_share:
        return rng.choice(SPECIAL)
    return rng.choice([rng.random(), rng.random() * 10 ** rng.randint(-8, 0), float(rng.randint(0, 1))])


def _make_pool(name, *, special_share, seed=7):
    rng = random.Random(seed)
    pool = Pool.objects.create(name=name)
    team = Team.objects.create(name=f"team-{name}")
    queries = [Query.objects.create(pool=pool, external_id=qid, text="") for qid in QUERY_IDS]
    cells = []
    for position, config_name in enumerate(CONFIGURATIONS):
        configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=config_name)
        runs = [Run.objects.create(configuration=configuration, source=Run.Source.FILE)]
        if position == 0:  # an older run first: only the newest is exported
            runs.append(Run.objects.create(configuration=configuration, source=Run.Source.FILE))
        for run in runs:
            for query in queries:
                if rng.random() < 0.15:  # a query with no stored row for this run
                    continue
                values = {
                    c: (rng.random() < 0.5) if c.startswith("has_") else _value(rng, special_share)
                    for c in CELL_VALUE_COLUMNS
                }
                cells.append(CellScore(run=run, query=query, **values))
    CellScore.objects.bulk_create(cells)
    return pool


@pytest.fixture
def tricky_pool(db):
    return _make_pool("tricky", special_share=0.05)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("flavour", ["exp", "trec", "judged", ("trec", "exp", "jk", "judged"), ("jk", "exp")])
def test_score_lines_are_the_previous_lines_byte_for_byte(tricky_pool, fmt, flavour):
    expected = reference_lines(tricky_pool, flavour, fmt)
    assert "".join(exports.score_lines(tricky_pool, flavour, fmt)) == expected
    assert b"".join(exports.score_blocks(tricky_pool, flavour, fmt)) == expected.encode()
    # every line of every configuration, and a value that only Python writes as it was
    assert expected.count("\n") > 7 * 20 * len(flavours.METRICS)
    assert ("NaN" if fmt == "jsonl" else "nan") in expected


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_written_by_postgresql_and_by_python_alike(db, seed):
    """Half the rows hold a value only Python writes: the two paths interleave in query order."""
    pool = _make_pool(f"mixed-{seed}", special_share=0.03 * seed, seed=seed)
    for fmt in ("jsonl", "csv"):
        assert "".join(exports.score_lines(pool, "exp", fmt)) == reference_lines(pool, "exp", fmt)


def test_export_scores_command_prints_the_previous_lines(tricky_pool):
    for fmt in ("jsonl", "csv"):
        out = StringIO()
        call_command("export_scores", "--pool", "tricky", "--flavor", "all", "--format", fmt, stdout=out)
        assert out.getvalue() == reference_lines(tricky_pool, list(flavours.FLAVOURS), fmt)


def test_a_pool_without_scores_exports_only_the_csv_header(db):
    pool = Pool.objects.create(name="empty")
    assert "".join(exports.score_lines(pool, "exp", "jsonl")) == ""
    assert "".join(exports.score_lines(pool, "exp", "csv")) == csv_line(COLUMNS)
