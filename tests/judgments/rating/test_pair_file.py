"""The admin's queue upload (`qid<TAB>docid`): parse_pair_file fuzzed with hypothesis (any input ends in
pairs or a QueueError, nothing else), every line ending read, and a web upload of any bytes never 500."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from judgments.models import Pair
from judgments.rating import queue

# Ids as the rest of the app allows them: printable, no whitespace (Unicode letters, symbols, '#' inside).
ids = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"), blacklist_characters="\x85"
    ),
    min_size=1,
    max_size=30,
).filter(lambda s: not s.startswith("#") and not any(ch.isspace() for ch in s))
line_ends = st.sampled_from(["\n", "\r\n", "\r"])


def _check_parsed(result):
    numbers = [n for n, _, _ in result]
    assert numbers == sorted(set(numbers)) and numbers[0] >= 1
    for _, qid, docid in result:
        for value in (qid, docid):
            assert value and all(ch.isprintable() and not ch.isspace() for ch in value)


@settings(max_examples=800, deadline=None)
@given(st.binary(max_size=400))
@example(b"q1\td1\rq2\td2\r")  # old Mac line endings: _csv.Error, HTTP 500 before
@example(b"q1\td1\x00\n")
@example(b'"q1"\t"d1\n')
@example(b"\xef\xbb\xbf\r\n")
def test_any_bytes_give_pairs_or_a_queue_error(data):
    try:
        result = queue.parse_pair_file(data)
    except queue.QueueError as error:
        assert str(error)
        assert all(isinstance(n, int) and message for n, message in error.problems)
        assert len(error.problems) <= queue.MAX_FILE_ERRORS
    else:
        _check_parsed(result)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_pairs_or_a_queue_error(text):
    try:
        result = queue.parse_pair_file(text)
    except queue.QueueError:
        pass
    else:
        _check_parsed(result)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(ids, ids, line_ends, st.sampled_from(["", "# a comment", "   "]), line_ends),
        min_size=1,
        max_size=20,
    ),
    st.booleans(),
)
def test_pairs_are_read_back_whatever_the_line_endings(rows, bom):
    text, expected, number = "\ufeff" if bom else "", [], 0
    for qid, docid, end, filler, filler_end in rows:
        text += f"{qid}\t{docid}{end}"
        number += 1
        expected.append((number, qid, docid))
        if filler:
            text += filler + filler_end
            number += 1
    assert queue.parse_pair_file(text.encode()) == expected


def test_old_mac_line_endings_are_lines():
    assert queue.parse_pair_file(b"q1\td1\rq2\td2\r") == [(1, "q1", "d1"), (2, "q2", "d2")]


def test_control_characters_and_long_ids_are_named():
    with pytest.raises(queue.QueueError) as error:
        queue.parse_pair_file("q1\td\x001\nq2\t" + "d" * 201 + "\nq\u20283\td3\n")
    assert [n for n, _ in error.value.problems] == [1, 2, 3]
    assert "U+0000 at position 2" in error.value.problems[0][1]
    assert "201 characters long" in error.value.problems[1][1]


# --- Through the web -----------------------------------------------------------------------------------

NASTY = st.sampled_from([b"\t", b"\r", b"\n", b"\x00", b"\xff", b"q1", b"d1", b"#", b" ", b"\xef\xbb\xbf"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), st.lists(NASTY, max_size=40).map(b"".join)))
@example(b"q1\td1\rq2\td2\r")
@example(b"q1\td\x001\n")
def test_a_web_upload_of_any_bytes_never_answers_500(client, site_admin, pool, data):
    client.force_login(site_admin)
    before = set(Pair.objects.filter(pool=pool, queued_at__isnull=False).values_list("pk", flat=True))
    response = client.post(
        f"/pools/{pool.name}/queue/upload/",
        {"file": SimpleUploadedFile("pairs.tsv", data), "priority": "0"},
    )
    assert response.status_code in (302, 400), response.status_code
    if response.status_code == 400:  # refused: nothing queued
        after = set(Pair.objects.filter(pool=pool, queued_at__isnull=False).values_list("pk", flat=True))
        assert after == before
