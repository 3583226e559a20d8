"""The published example files of Quepid and RRE (tests/data/quepid, tests/data/rre; see their READMEs)
and the helpers the tests of both formats share."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from judgments.exchange.formats import FormatError

DATA = Path(__file__).resolve().parents[3] / "data"
QUEPID = DATA / "quepid"
RRE = DATA / "rre"


def where(fn, data) -> list[tuple[int, str]]:
    with pytest.raises(FormatError) as info:
        fn(data, "f")
    return [(p.line, p.field) for p in info.value.problems]


def messages(fn, data) -> str:
    with pytest.raises(FormatError) as info:
        fn(data, "f")
    return str(info.value)


def triples(records) -> list[tuple[str, str, int]]:
    return [(r.query, r.doc_id, r.grade) for r in records]


FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
