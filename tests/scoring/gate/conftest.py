"""A pool scored for real: queries, qrels and three runs imported with the commands, scored by `score`.

`gated` pool: 40 queries graded 0-4 on 12 documents each; `baseline` ranks the relevant documents high,
`worse` puts them low on most queries and ranks 4 queries not at all, `same` is a copy of `baseline`,
`close` differs from `baseline` on 2 queries only (a small drop, not significant).
"""

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from tests.judgments.capture.conftest import engine, live_configuration, search_pool  # noqa: F401

N_QUERIES = 40
DOCS = 12


def run_command(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _run_lines(name, rankings):
    return "".join(
        f"{qid} Q0 {doc} {rank} {100 - rank} {name}\n"
        for qid, docs in rankings.items()
        for rank, doc in enumerate(docs, 1)
    )


@pytest.fixture
def gated(db, tmp_path):
    rng = np.random.default_rng(7)
    queries = [f"q{i:02d}" for i in range(N_QUERIES)]
    grades = {q: {f"{q}-d{j}": int(rng.integers(0, 5)) for j in range(DOCS)} for q in queries}
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\tquery text {q}\n" for q in queries))
    (tmp_path / "grades.qrels").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in grades.items() for d, g in docs.items())
    )
    best = {q: sorted(docs, key=lambda d: (-docs[d], d)) for q, docs in grades.items()}
    worse = {}
    for i, q in enumerate(queries):
        if i % 10 == 3:
            continue  # not ranked: counts 0
        docs = list(best[q])
        worse[q] = docs[::-1] if i % 3 else [docs[1], docs[0], *docs[2:]]
    close = dict(best)
    close[queries[0]] = best[queries[0]][::-1]
    close[queries[1]] = best[queries[1]][::-1]
    runs = {"baseline": best, "same": best, "worse": worse, "close": close}
    for name, rankings in runs.items():
        (tmp_path / f"{name}.run").write_text(_run_lines(name, rankings))
    run_command("import_queries", "--pool", "gated", str(tmp_path / "queries.tsv"))
    run_command("import_qrels", "--pool", "gated", str(tmp_path / "grades.qrels"))
    for name in runs:
        run_command("import_run", "--pool", "gated", "--configuration", name, str(tmp_path / f"{name}.run"))
    run_command("score", "--pool", "gated")
    from judgments.models import Pool

    pool = Pool.objects.get(name="gated")
    pool.test_rankings = runs  # {configuration: {query: [doc ids]}}, for tests that import more runs
    pool.test_run_lines = _run_lines
    return pool


def exported(pool, flavour="exp") -> dict:
    """{configuration: {query: {metric: value}}} from export_scores (the per-query lines)."""
    found: dict = {}
    for line in run_command("export_scores", "--pool", pool, "--flavor", flavour).splitlines():
        row = json.loads(line)
        if row["query"] != "all":
            found.setdefault(row["configuration"], {}).setdefault(row["query"], {})[row["metric"]] = row[
                "value"
            ]
    return found
