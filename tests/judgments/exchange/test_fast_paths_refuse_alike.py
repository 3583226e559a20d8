"""The fast paths (the run import's fastrun, the qrels import's read_common) and the general parsers,
fed the same mutated files: the same refusal with the same message, or the same rows stored; and a
refused file writes nothing."""

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgments import pool_keys, services
from judgments.exchange.formats import FormatError
from judgments.exchange.imports import fastrun, import_qrels, import_run, qrels_table
from judgments.models import Judgment, SearchConfiguration

from .test_import_properties import snapshot

# Files in the common shape (what the fast paths take), before mutation.
RUN = b"".join(
    f"q{q} Q0 d{(q * 7 + r) % 13} {r + 1} {10 - r}.5 tag\n".encode() for q in range(3) for r in range(5)
)
QRELS = b"".join(f"q{q} 0 d{(q * 5 + r) % 11} {(q + r) % 5}\n".encode() for q in range(3) for r in range(4))
# What keeps a file in the common shape or breaks one rule at a time.
EDITS = [b" ", b"\n", b"\t", b"\r", b"0", b"9", b"-", b"+", b".", b"e", b"_", b"x", b"#", b"\\", b"\xc3\xa9",
         b"1e999", b"nan", b"5", b"Q0", b"d1", b"00"]  # fmt: skip


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    lines = seed.split(b"\n")[:-1]
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["edit", "duplicate", "drop", "swap", "cut"]))
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        if not lines:
            break
        if op == "edit":
            line = bytearray(lines[i])
            at = draw(st.integers(0, len(line)))
            size = draw(st.integers(0, 2))
            line[at : at + size] = draw(st.sampled_from(EDITS))
            lines[i] = bytes(line)
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "drop":
            del lines[i]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines = lines[:i]
    return b"".join(line + b"\n" for line in lines)


def _outcome(call, read):
    """('refused', message) or ('stored', what was stored); rolled back either way."""
    with transaction.atomic():
        try:
            result = call()
        except FormatError as error:
            outcome = ("refused", str(error))
        else:
            outcome = ("stored", read(result))
        transaction.set_rollback(True)
    return outcome


HYPOTHESIS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))


@HYPOTHESIS
@given(data=mutated(RUN), order=st.sampled_from(["score", "rank"]))
def test_the_run_fast_path_refuses_and_stores_what_the_parser_does(configuration, monkeypatch, data, order):
    pool_keys.ensure_documents(configuration.pool, ["d1", "d5"])

    def run_import():
        fresh = SearchConfiguration.objects.create(
            pool=configuration.pool, team=configuration.team, name="new"
        )
        return import_run(fresh, data, name="x.run", order=order)

    fast = _outcome(run_import, services.ranking_external_ids)
    with monkeypatch.context() as patched:
        patched.setattr(fastrun, "import_run_fast", lambda *args, **kwargs: None)
        general = _outcome(run_import, services.ranking_external_ids)
    assert fast == general
    if fast[0] == "refused":
        with transaction.atomic():
            fresh = SearchConfiguration.objects.create(
                pool=configuration.pool, team=configuration.team, name="new"
            )
            before = snapshot(configuration.pool)
            with pytest.raises(FormatError):
                import_run(fresh, data, name="x.run", order=order)
            assert snapshot(configuration.pool) == before
            transaction.set_rollback(True)


@HYPOTHESIS
@given(data=mutated(QRELS))
def test_the_qrels_fast_path_refuses_and_stores_what_the_parser_does(pool, rater, monkeypatch, data):
    def qrels_import():
        return import_qrels(pool, data, name="x.qrels", rater=rater)

    def stored(summary):
        rows = Judgment.objects.filter(pair__pool=pool, rater=rater)
        return str(summary), sorted(
            rows.values_list("pair__query__external_id", "pair__document__external_id", "grade")
        )

    fast = _outcome(qrels_import, stored)
    with monkeypatch.context() as patched:
        patched.setattr(qrels_table, "read_common", lambda data: None)
        general = _outcome(qrels_import, stored)
    assert fast == general
    if fast[0] == "refused":
        before = snapshot(pool)
        with pytest.raises(FormatError):
            qrels_import()
        assert snapshot(pool) == before
