"""The leaderboard by assessor (scoring.assessors): the one-pass computation equals scoring each
assessor's grades on its own with full rankings (scoring.estimates.per_query, the computation it
replaced), under every combine rule; the stored snapshot equals the direct computation after each kind
of write that changes it; a big pool's page shows the snapshot and never computes it."""

import math
import random
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from judgments import raters, services, snapshots
from judgments.judges.services import create_or_update_judge
from judgments.models import (
    Document,
    Judgment,
    ModelJudge,
    Pair,
    Query,
    Run,
    SearchConfiguration,
    Snapshot,
)
from scoring import assessors
from scoring.estimates import per_query
from scoring.flavours import DEFAULT_FLAVOUR
from scoring.grades import human_grades, rater_grades
from tests.conftest import login

N_QUERIES, N_DOCS, DEPTH = 12, 16, 14  # rankings deeper than assessors.DEPTH


@pytest.fixture
def assessed(pool, rater, other_rater, team, site_admin):
    """Two raters (one grading 60 % of the pairs, with can't judge and excluded grades), a judge, final
    grades (one on a pair nobody graded), three configurations ranking 14 of 16 documents of 11 queries,
    one of them with an older run too."""
    rng = random.Random(11)
    Query.objects.filter(pool=pool).delete()
    judge = create_or_update_judge(pool, "llm", base_url="http://127.0.0.1:9/v1", model="gpt-x")[0]
    docs = [
        Document.objects.create(pool=pool, external_id=f"e{d}", title="T", body="b") for d in range(N_DOCS)
    ]
    queries = [Query.objects.create(pool=pool, external_id=f"s{q:02d}", text="q") for q in range(N_QUERIES)]
    rows = []
    for qi, query in enumerate(queries):
        for doc in docs:
            pair = Pair.objects.create(pool=pool, query=query, document=doc)
            g = rng.randint(0, 4)
            if qi < N_QUERIES - 1:
                rows.append(Judgment(pair=pair, rater=rater, grade=g))
            if rng.random() < 0.6:
                cant = rng.random() < 0.1
                rows.append(
                    Judgment(
                        pair=pair,
                        rater=other_rater,
                        grade=None if cant else rng.randint(0, 4),
                        cant_judge=cant,
                        cant_judge_reason="no text" if cant else "",
                        excluded=not cant and rng.random() < 0.15,
                    )
                )
            if rng.random() < 0.9:
                rows.append(Judgment(pair=pair, rater=judge.user, grade=min(4, g + rng.choice((0, 1, 2)))))
    Judgment.objects.bulk_create(rows)
    first = Pair.objects.filter(pool=pool, query=queries[0])
    Pair.objects.filter(pk__in=[p.pk for p in first[:3]]).update(final_grade=4)
    Judgment.objects.filter(pair=first[5]).delete()
    Pair.objects.filter(pk=first[5].pk).update(final_grade=3)  # a final grade and no grade
    names = [d.external_id for d in docs]
    for i, name in enumerate(("bm25", "dense", "hybrid")):
        configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=name)
        for version in range(2 if name == "dense" else 1):
            ranking = {}
            for q in queries[:-1]:
                order = names[:]
                random.Random(f"{name}{q.external_id}{version}").shuffle(order)
                ranking[q.external_id] = order[: DEPTH - i]
            services.record_run(configuration, ranking, source="api")
    return judge


def reference(pool) -> dict:
    """{(kind, user id): {configuration pk: mean}}: each assessor's grades scored on their own, with
    whole rankings (the computation scoring.assessors did before it was one pass)."""
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    run_ids = [r.pk for r in runs]
    judges = set(ModelJudge.objects.filter(pool=pool).values_list("user_id", flat=True))

    def means(grades) -> dict:
        queries = np.unique(grades.query)
        values = per_query(run_ids, queries, grades, assessors.MEASURE, DEFAULT_FLAVOUR)
        return {r.configuration_id: float(values[i].mean()) for i, r in enumerate(runs)}

    human_queries = set(
        Judgment.objects.filter(pair__pool=pool, cant_judge=False)
        .exclude(rater_id__in=judges)
        .values_list("pair__query_id", flat=True)
    )
    combined = human_grades(pool, sorted(human_queries))
    result = {("humans", None): (len(combined), means(combined))}
    for user_id in set(Judgment.objects.filter(pair__pool=pool).values_list("rater_id", flat=True)):
        grades = rater_grades(pool, user_id)
        if len(grades) >= assessors.MIN_GRADES:
            result[("judge" if user_id in judges else "rater", user_id)] = (len(grades), means(grades))
    return result


def as_dict(result: assessors.Assessors) -> dict:
    pks = [c.pk for c in result.configurations]
    return {(b.kind, b.user_id): (b.n_grades, dict(zip(pks, b.means, strict=True))) for b in result.boards}


def assert_same(result: assessors.Assessors, expected: dict) -> None:
    got = as_dict(result)
    assert got.keys() == expected.keys()
    for key, (n, means) in expected.items():
        assert got[key][0] == n, key
        assert got[key][1] == pytest.approx(means, abs=1e-12), key


@pytest.mark.parametrize("rule", ["mean", "median", "majority", "min", "max"])
def test_one_pass_equals_each_assessor_scored_alone(assessed, pool, rule):
    pool.combine_rule = rule
    pool.save()
    result = assessors.assessor_boards(pool)
    expected = reference(pool)
    assert len(expected) == 4  # the humans, two raters and the judge
    assert_same(result, expected)
    humans = result.boards[0]
    assert humans.name == assessors.HUMANS and humans.means == sorted(humans.means, reverse=True)
    assert [b.kind for b in result.boards] == ["humans", "rater", "rater", "judge"]
    assert result.taus[0][0] == pytest.approx(1.0)


@pytest.mark.parametrize("per_read", [1, 7, 40])
def test_rankings_read_a_slice_of_queries_at_a_time_give_the_same_boards(
    assessed, pool, monkeypatch, per_read
):
    monkeypatch.setattr(assessors, "RANKINGS_PER_READ", per_read)  # 3 runs: 1, 2 and 13 queries a slice
    assert_same(assessors.assessor_boards(pool), reference(pool))


def test_an_assessor_under_min_grades_has_no_board(assessed, pool, other_rater):
    keep = Judgment.objects.filter(pair__pool=pool, rater=other_rater, cant_judge=False).values_list(
        "pk", flat=True
    )[: assessors.MIN_GRADES - 1]
    Judgment.objects.filter(rater=other_rater).exclude(pk__in=list(keep)).delete()
    result = assessors.assessor_boards(pool)
    assert other_rater.pk not in [b.user_id for b in result.boards]
    assert_same(result, reference(pool))


def import_rater_csv(tmp_path, pool, rater, lines: list[str]) -> None:
    """An import of one rater's grades (manage.py import_judgments --format rater-csv)."""
    path = tmp_path / "grades.csv"
    path.write_text("\n".join([f"query_id,doc_id,{rater.username}", *lines]) + "\n")
    call_command(
        "import_judgments", "--pool", pool.name, "--format", "rater-csv", str(path), stdout=StringIO()
    )


def stored(pool) -> assessors.Assessors:
    return assessors.from_snapshot(Snapshot.objects.get(pool=pool, kind="assessors", key="").value)


def assert_snapshot_is_direct(pool) -> None:
    direct, kept = assessors.assessor_boards(pool), stored(pool)
    assert kept.configurations == direct.configurations
    assert [(b.name, b.kind, b.user_id, b.n_grades, b.n_queries) for b in kept.boards] == [
        (b.name, b.kind, b.user_id, b.n_grades, b.n_queries) for b in direct.boards
    ]
    for a, b in zip(kept.boards, direct.boards, strict=True):
        assert a.means == pytest.approx(b.means, abs=1e-12, nan_ok=True)
    for a, b in zip(kept.taus, direct.taus, strict=True):
        assert a == pytest.approx(b, nan_ok=True)


def test_the_snapshot_equals_the_direct_computation_after_each_write(
    assessed, pool, rater, other_rater, site_admin, tmp_path
):
    snapshots.refresh(pool)
    assert_snapshot_is_direct(pool)
    pair = Judgment.objects.filter(rater=rater, pair__pool=pool).first().pair
    dense = SearchConfiguration.objects.get(pool=pool, name="dense")
    queries = list(Query.objects.filter(pool=pool).values_list("external_id", flat=True))
    writes = [
        lambda: services.record_judgment(
            pair, rater, grade=0 if pair.judgments.get(rater=rater).grade else 4
        ),
        lambda: services.record_judgment(pair, assessed.user, grade=1),  # the judge regrades
        lambda: services.record_judgment(pair, other_rater, cant_judge=True, reason="no text"),
        lambda: raters.set_excluded(pool, other_rater, True, site_admin),
        lambda: services.set_final_grade(pair, 2, site_admin),
        lambda: services.record_run(dense, {q: ["e1", "e2", "e3"] for q in queries}, source="api"),
        lambda: import_rater_csv(tmp_path, pool, rater, ["s01,e1,0", "s01,e2,4", "s02,e3,1"]),
    ]
    for write in writes:
        write()
        assert not snapshots.refresh(pool).skipped
        assert_snapshot_is_direct(pool)


def test_a_big_pools_page_reads_the_snapshot(client, assessed, pool, engineer, monkeypatch):
    url = reverse("scoring:assessors", args=[pool.name])
    login(client, engineer)
    inline = client.get(url).content.decode()  # a small pool: computed for the page
    assert 'id="assessor-boards"' in inline and "Figures as of" not in inline
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    monkeypatch.setattr(assessors, "assessor_boards", lambda pool: pytest.fail("computed inline"))
    first = client.get(url).content.decode()
    assert "being computed for the first time" in first and 'id="assessor-boards"' not in first
    monkeypatch.undo()
    snapshots.refresh(pool)
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    monkeypatch.setattr(assessors, "assessor_boards", lambda pool: pytest.fail("computed inline"))
    page = client.get(url).content.decode()
    assert "Figures as of" in page and "the pool unchanged since" in page
    assert page[page.index('id="assessor-boards"') :] == inline[inline.index('id="assessor-boards"') :]


def test_a_nan_tau_survives_the_snapshot(pool, team, rater):
    """One configuration: no τ (nan), stored as null and shown as a dash."""
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="only")
    services.record_run(configuration, {"q1": ["d1"]}, source="api")
    snapshots.refresh(pool)
    kept = stored(pool)
    assert math.isnan(kept.taus[0][0]) and kept.configurations == [configuration]


def test_the_leaderboards_humans_top_comes_from_the_snapshot(assessed, pool, monkeypatch):
    """A circular configuration: the leaderboard's note names the humans' top five, read from the
    stored boards on a big pool (never computed for the page)."""
    from scoring.views.evidence import leaderboard_notes

    SearchConfiguration.objects.filter(pool=pool, name="dense").update(model_name="gpt-4o")  # judge: gpt-x
    direct = assessors.assessor_boards(pool)
    snapshots.refresh(pool)
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    monkeypatch.setattr(assessors, "assessor_boards", lambda pool: pytest.fail("computed inline"))
    notes = leaderboard_notes(pool)
    assert [c["configuration"].name for c in notes["circular"]] == ["dense"]
    humans = direct.boards[0]
    assert [(c, pytest.approx(m)) for c, m in notes["humans_top"]] == [
        (direct.configurations[i], humans.means[i]) for i in humans.order[:5]
    ]
