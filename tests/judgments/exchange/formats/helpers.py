"""Helpers of the formats tests: inline files, the problems a parser raises, trec_eval's test data,
and the hypothesis strategies the property tests share."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from judgments.exchange.formats import FormatError, Problem

TESTDATA = Path(__file__).resolve().parents[5] / "shared" / "testdata" / "trec_eval"
if not TESTDATA.is_dir():  # a clone elsewhere: shared/ sits beside the work tree
    TESTDATA = Path("/work/shared/testdata/trec_eval")
needs_testdata = pytest.mark.skipif(not TESTDATA.is_dir(), reason="trec_eval test data not available")


def lines(*rows: str) -> bytes:
    return "".join(r + "\n" for r in rows).encode()


def problems(fn, data, **kwargs) -> list[Problem]:
    with pytest.raises(FormatError) as info:
        fn(data, "f.txt", **kwargs)
    return info.value.problems


def where(fn, data, **kwargs) -> list[tuple[int, str]]:
    return [(p.line, p.field) for p in problems(fn, data, **kwargs)]


def _pytrec_scores(qrels_text: str, run_text: str) -> dict:
    qrel = pytrec_eval.parse_qrel(io.StringIO(qrels_text))
    run = pytrec_eval.parse_run(io.StringIO(run_text))
    measures = {"map", "P", "recip_rank", "ndcg", "ndcg_cut", "bpref", "Rprec"}
    return pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)


# Property tests

ID_CHARS = st.characters(
    blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), blacklist_characters="\u200b\ufeff"
)
ids = st.text(ID_CHARS, min_size=1, max_size=12).filter(
    lambda s: not any(c.isspace() for c in s) and not s.startswith("#")
)
grades = st.integers(0, 4)
texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=0, max_size=30
)
PROPS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
