"""The one CSV writer for spreadsheets: cells that would run as formulas are neutralised, the CSV parsers
reverse exactly that, and every spreadsheet-bound export uses it (scores, export_scores, Quepid CSV,
per-rater CSV)."""

import csv
import io
from io import StringIO

import pytest
from django.core.management import call_command
from hypothesis import example, given
from hypothesis import strategies as st

from judgments.exchange import formats
from judgments.exchange.formats.spreadsheet import FORMULA_START, csv_line, neutralise, restore

EVIL = ['=HYPERLINK("http://evil.example","x")', "=cmd|' /C calc'!A0", "+1+1", "-x", "@SUM(A1)", "\tA", "\rA"]
# Text that is mostly formula starts and apostrophes, where mistakes hide.
tricky = st.text(alphabet=st.sampled_from(["=", "+", "-", "@", "\t", "\r", "'", "1", ".", "e", "a", " "]))


def _runs_as_formula(cell: str) -> bool:
    from judgments.exchange.formats.spreadsheet import _NUMBER

    return cell.startswith(FORMULA_START) and not _NUMBER.fullmatch(cell)


@given(st.one_of(st.text(), tricky))
@example("'")
@example("''=x")
@example("'til tuesday")
def test_restore_reverses_neutralise_exactly_and_nothing_runs(text):
    stored = neutralise(text)
    assert restore(stored) == text
    assert not _runs_as_formula(stored)


@pytest.mark.parametrize("text", ["'til tuesday", "it's", "'", "''", "a=b", "-0.031", "+3", "-inf", "1e-3"])
def test_harmless_cells_are_written_and_read_as_they_are(text):
    assert neutralise(text) == text
    assert restore(text) == text


@pytest.mark.parametrize("text", EVIL)
def test_formula_cells_get_one_apostrophe(text):
    assert neutralise(text) == "'" + text
    assert next(csv.reader(io.StringIO(csv_line([text, 1.5, None]))))[0] == "'" + text


@given(st.lists(st.one_of(st.sampled_from(EVIL), tricky).filter(lambda s: s and s == s.strip()), min_size=1))
def test_quepid_csv_round_trip_is_exact(queries):
    rows = [(query, f"d{i}", i % 5) for i, query in enumerate(dict.fromkeys(queries))]
    text = "".join(formats.write_judgments_csv(rows))
    for line in list(csv.reader(io.StringIO(text)))[1:]:
        assert not _runs_as_formula(line[0])
    back = formats.parse_judgments_csv(text.encode(), "quepid.csv")
    assert [(r.query, r.doc_id, r.grade) for r in back] == rows


def test_rater_csv_round_trip_is_exact_with_formula_ids():
    raters = ["=rater", "@bob", "plain"]
    rows = [("=q1", "-d1", {"=rater": 3, "@bob": "X"}), ("+q2", "@d2", {"plain": 0})]
    text = "".join(formats.write_rater_csv(raters, rows))
    assert text.splitlines()[0] == "query_id,doc_id,'=rater,'@bob,plain"
    back = formats.parse_rater_csv(text, "raters.csv")
    assert back.raters == raters
    assert [
        (r.query_id, r.doc_id, {k: v for k, v in r.grades.items() if v is not None}) for r in back.rows
    ] == [
        ("=q1", "-d1", {"=rater": 3, "@bob": "X"}),
        ("+q2", "@d2", {"plain": 0}),
    ]


# --- Every spreadsheet-bound export -------------------------------------------------------------------


@pytest.fixture
def evil_pool(pool, team, engineer, rater, site_admin):
    """A configuration and a query whose names a spreadsheet would run, with a scored run and a grade."""
    from judgments import services
    from judgments.models import Pair, Query, SearchConfiguration
    from scoring.services import rescore_pool

    pool.members.add(site_admin)
    query = Query.objects.get(pool=pool, external_id="q1")
    query.text = "=cmd|' /C calc'!A0"
    query.save()
    evil = SearchConfiguration.objects.create(
        pool=pool, team=team, name='=HYPERLINK("http://evil.example","x")'
    )
    services.record_run(evil, {"q1": ["d1", "d2"]}, source="api", submitted_by=engineer)
    pair = Pair.objects.get_or_create(pool=pool, query=query, document=pool.documents.get(external_id="d1"))[
        0
    ]
    services.record_judgment(pair, rater, grade=3)
    rescore_pool(pool)
    return pool


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _body(response) -> str:
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def _no_formula(rows):
    for row in rows:
        for cell in row:
            assert not _runs_as_formula(cell), cell


def test_scores_download_is_neutralised(client, evil_pool, engineer):
    client.force_login(engineer)
    response = client.get(f"/pools/{evil_pool.name}/export/scores.csv?flavor=exp")
    assert response.status_code == 200
    rows = _rows(_body(response))
    _no_formula(rows)
    assert {r[0] for r in rows[1:]} == {'\'=HYPERLINK("http://evil.example","x")'}
    assert any(r[3] == "ndcg@10" and float(r[4]) == 1.0 for r in rows[1:])  # numbers stay numbers


def test_export_scores_command_csv_is_neutralised(evil_pool):
    out = StringIO()
    call_command("export_scores", "--pool", evil_pool.name, "--format", "csv", stdout=out)
    rows = _rows(out.getvalue())
    _no_formula(rows)
    assert rows[1][0] == '\'=HYPERLINK("http://evil.example","x")'


def test_quepid_csv_export_is_neutralised_and_imports_back_to_the_same_pair(client, evil_pool, site_admin):
    from judgments.exchange.imports.judgments import import_judgments
    from judgments.models import Judgment

    client.force_login(site_admin)
    text = _body(client.get(f"/pools/{evil_pool.name}/export/judgments-csv/"))
    rows = _rows(text)
    _no_formula(rows)
    assert rows[1] == ["'=cmd|' /C calc'!A0", "d1", "3"]
    summary = import_judgments(evil_pool, text.encode(), format="csv", name="back.csv", rater=site_admin)
    assert summary.created == 1
    back = Judgment.objects.get(rater=site_admin)
    assert (back.pair.query.text, back.pair.document.external_id, back.grade) == (
        "=cmd|' /C calc'!A0",
        "d1",
        3,
    )
