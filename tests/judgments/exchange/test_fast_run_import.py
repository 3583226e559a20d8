"""The fast path for common run files stores exactly what the general parser and record_run store,
and steps aside (returns None) for anything else, leaving the line-numbered errors to the parser."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgments import pool_keys, services
from judgments.exchange.formats import FormatError, parse_run
from judgments.exchange.imports import fastrun, import_run
from judgments.exchange.imports.fastrun import _read_lines, import_run_fast
from judgments.models import Document, Ranking, Run

SCORES = ["1", "2", "2.0", "-0", "0.0", "+3", "1e2", "100", "0.5", ".5", "5.", "-1.5E-1", "007", "1e-320"]
# Ids are read as 8-byte words: some fill several, or differ only in a later word or by a suffix.
DOCS = ["d1", "d2", "d10", "D1", "doc#1", "a_b", "z", "d1.x", "Q0", "abcdefgh", "abcdefghi", "abcdefgh0"]
DOCS += ["clueweb09-en0000-00-00000", "clueweb09-en0000-00-00001", "clueweb09-en0000-00-0000"]
QUERIES = ["q1", "q2", "301", "Q-3", "query-number-000000001", "query-number-000000002"]


@st.composite
def run_files(draw):
    """Valid-looking run files in the common shape: ties, unsorted lines, interleaved queries, and
    sometimes a doc twice in a query or a rank used twice."""
    queries = draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=3, unique=True))
    lines = []
    for qid in queries:
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
        if draw(st.integers(0, 9)) == 0:
            docs.append(docs[0])  # a doc twice
        for rank, doc in enumerate(docs, start=1):
            score = draw(st.sampled_from(SCORES))
            shown_rank = (
                draw(st.sampled_from([str(rank), f"+{rank}", "1"]))
                if draw(st.integers(0, 9)) == 0
                else str(rank)
            )
            lines.append(f"{qid} Q0 {doc} {shown_rank} {score} tag{draw(st.integers(0, 1))}")
    if draw(st.booleans()):
        lines = draw(st.permutations(lines))
    return ("\n".join(lines) + ("\n" if draw(st.booleans()) else "")).encode()


def _columns(data: bytes, order: str):
    """The fast path's reading of a file: (lines, their stored order), or None if it declines."""
    lines = _read_lines(data)
    rows = None if lines is None else lines.order(0, len(lines.q), order)
    return None if rows is None else (lines, rows)


@settings(max_examples=300, deadline=None)
@given(data=run_files(), order=st.sampled_from(["score", "rank"]))
def test_fast_columns_agree_with_the_parser(data, order):
    try:
        expected = parse_run(data, "x", order=order)
    except FormatError:
        expected = None
    columns = _columns(data, order)
    if expected is None:
        # The parser refuses the file: the fast path declines it too, or leaves the doc twice to the
        # database constraint (which makes import_run_fast return None).
        if columns is not None:
            lines, _rows = columns
            pairs = {(lines.query_names[lines.q[i]], lines.docs[i]) for i in range(len(lines.q))}
            assert len(pairs) < len(lines.q)
        return
    if columns is None:
        return  # declining is always allowed
    lines, rows = columns
    got: dict[str, list[str]] = {}
    for i in rows.tolist():
        got.setdefault(lines.query_names[lines.q[i]].decode(), []).append(lines.docs[i].decode())
    assert got == expected.rankings
    assert lines.tag.decode() == expected.tag


@pytest.mark.parametrize(
    "data",
    [
        b"q1 Q0 d1 1 2 t\n\nq1 Q0 d2 2 1 t\n",  # blank line
        b"# comment\nq1 Q0 d1 1 2 t\n",  # comment
        b"q1\tQ0\td1\t1\t2\tt\n",  # tabs
        b"q1 Q0 d1 1 2 t \n",  # trailing space
        b"q1 Q0 d1 1 2 t\r\n",  # CRLF
        b"q1 Q0 d\xc3\xa9 1 2 t\n",  # non-ASCII
        b"q1 Q0 d1 1 2 t x\nq1 Q0 d2 1 t\n",  # 7 and 5 fields
        b"q1 Q0 d1 1 0x10 t\n",  # hex score
        b"q1 Q0 d1 1_0 1 t\n",  # underscore rank
        b"q1 Q0 d1 1 1e999 t\n",  # infinite score
        b"q1 Q0 d\\1 1 1 t\n",  # backslash
        b"",
    ],
)
def test_unusual_files_are_left_to_the_general_parser(data):
    assert _columns(data, "score") is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=run_files(),
    order=st.sampled_from(["score", "rank"]),
    read_pool=st.booleans(),
    block_lines=st.sampled_from([20_000, 1, 3]),
)
def test_fast_import_stores_what_record_run_stores(
    configuration, monkeypatch, data, order, read_pool, block_lines
):
    # Documents already in the pool (and more from earlier examples), one of them not ASCII; the
    # pool's ids are read whole (read_pool) or matched on the server; rankings sent in small blocks.
    pool_keys.ensure_documents(configuration.pool, ["d1", "clueweb09-en0000-00-00001", "dé", "abcdefgh"])
    monkeypatch.setattr(fastrun, "_POOL_BYTES_PER_ID", 1 if read_pool else 10**9)
    monkeypatch.setattr(fastrun, "_BLOCK_LINES", block_lines)
    try:
        expected = parse_run(data, "x", order=order).rankings
    except FormatError:
        expected = None
    before = Run.objects.count()
    run = import_run_fast(configuration, data, name="x.run", order=order)
    if run is None:
        assert Run.objects.count() == before
        return
    assert expected is not None
    assert services.ranking_external_ids(run) == expected


def test_import_run_uses_the_fast_path_and_falls_back_with_line_numbers(configuration, monkeypatch):
    from judgments.exchange.imports import fastrun

    calls = []
    original = fastrun.import_run_fast
    monkeypatch.setattr(fastrun, "import_run_fast", lambda *a, **k: calls.append(1) or original(*a, **k))
    run = import_run(configuration, b"q1 Q0 d3 1 2.5 t\nq1 Q0 d1 2 2.5 t\nq2 Q0 d2 1 1 t\n", name="a.run")
    assert calls and services.ranking_external_ids(run) == {"q1": ["d3", "d1"], "q2": ["d2"]}
    with pytest.raises(FormatError) as error:
        import_run(configuration, b"q1 Q0 d3 1 2.5 t\nq1 Q0 d3 2 2 t\n", name="twice.run")
    assert [(p.line, p.field) for p in error.value.problems] == [(2, "docid")]
    assert Run.objects.count() == 1


@pytest.mark.parametrize(
    "data",
    [
        b"q1 Q0 x1 1 3 t\nq1 Q0 x2 2 2 t\nq2 Q0 x1 1 1 t\nq1 Q0 x3 3 1 t\n",  # queries interleaved
        b"q1 Q0 x1 1 3 t\nq1 Q0 x2 2 2 t\nq1 Q0 x3 3 1 t\nq2 Q0 x1 1 1 t\n",  # documents
    ],
)
def test_ids_that_hash_alike_leave_the_file_to_the_general_parser(configuration, monkeypatch, data):
    monkeypatch.setattr(fastrun._Field, "hashes", lambda self: np.zeros(len(self), dtype=np.uint64))
    documents = Document.objects.count()
    assert import_run_fast(configuration, data, name="a.run") is None
    assert not Run.objects.exists() and Document.objects.count() == documents
    run = import_run(configuration, data, name="a.run")
    assert services.ranking_external_ids(run) == {"q1": ["x1", "x2", "x3"], "q2": ["x1"]}


def test_a_bad_score_in_a_later_block_writes_nothing(configuration, monkeypatch):
    monkeypatch.setattr(fastrun, "_BLOCK_LINES", 2)
    data = b"q1 Q0 x1 1 3 t\nq1 Q0 x2 2 2 t\nq2 Q0 x1 1 1 t\nq3 Q0 x4 1 1e999 t\n"
    documents = Document.objects.count()
    assert import_run_fast(configuration, data, name="a.run") is None
    assert not Ranking.objects.exists() and Document.objects.count() == documents
    with pytest.raises(FormatError) as error:
        import_run(configuration, data, name="a.run")
    assert [(p.line, p.field) for p in error.value.problems] == [(4, "score")]


def test_rankings_split_into_blocks_at_query_boundaries(configuration, monkeypatch):
    lines = [f"q{q} Q0 d{d} {d} {10 - d} t" for q in range(5) for d in range(1, q + 2)]
    lines = _read_lines(("\n".join(lines) + "\n").encode())
    blocks = lines.blocks(4)
    assert blocks[0][0] == 0 and blocks[-1][1] == len(lines.q)
    assert all(end == start for (_, end), (start, _) in zip(blocks, blocks[1:], strict=False))
    assert all(lines.q[start] != lines.q[start - 1] for start, _ in blocks[1:])
    assert len(blocks) > 1


def test_a_document_twice_in_a_later_block_writes_nothing(configuration, monkeypatch):
    """The server refuses a later block (the no-duplicate check) after earlier blocks were stored:
    everything is rolled back, and the general parser names the line."""
    monkeypatch.setattr(fastrun, "_BLOCK_LINES", 2)
    data = b"q1 Q0 x1 1 3 t\nq1 Q0 x2 2 2 t\nq2 Q0 x1 1 1 t\nq3 Q0 x4 1 2 t\nq3 Q0 x4 2 1 t\nq4 Q0 x1 1 1 t\n"
    assert import_run_fast(configuration, data, name="a.run") is None
    assert not Run.objects.exists() and not Ranking.objects.exists()
    with pytest.raises(FormatError) as error:
        import_run(configuration, data, name="a.run")
    assert [(p.line, p.field) for p in error.value.problems] == [(5, "docid")]


@pytest.mark.parametrize("n", [1, 2, 7, 3000])
def test_known_ids_are_found_through_the_table_and_the_shared_slots(n):
    """_Known.positions: every id of the pool is found, whether its slot of the table is its own or
    shared with another id (then by binary search); an id not in the pool gets some position, which
    the byte-for-byte check refuses."""
    names = [f"doc-{i * 7919 % 100_003}" for i in range(n)]
    data = "\n".join(names).encode()
    field = _field_of(data)
    known = fastrun._Known(field, np.arange(100, 100 + n, dtype=np.int64))
    wanted = _field_of("\n".join([*reversed(names), "not-there"]).encode())
    at = known.positions(wanted.hashes())
    assert [known.ids[i] for i in at[:n].tolist()] == [name.encode() for name in reversed(names)]
    assert not wanted.same(np.array([n]), known.ids, at[n:])[0]
    bits = n.bit_length() + 1
    slots = known.ids.hashes() >> np.uint64(64 - bits)
    if n == 3000:  # the binary search did some of the work
        assert len(np.unique(slots)) < n


def _field_of(data: bytes):
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.append(newlines, len(data))
    return fastrun._Field.read(data, fastrun._words(data), starts, ends)


def test_a_text_stream_is_read_as_lines_by_the_general_parser(configuration):
    """A file opened in text mode cannot take the fast path (it reads bytes); the general parser
    still gets it line by line."""
    import io

    run = import_run(
        configuration, io.StringIO("q1 Q0 d3 1 2.5 t\nq1 Q0 d1 2 2 t\nq2 Q0 d2 1 1 t\n"), name="a.run"
    )
    assert services.ranking_external_ids(run) == {"q1": ["d3", "d1"], "q2": ["d2"]}
