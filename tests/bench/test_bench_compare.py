"""bench_compare runs end to end on a small pool, prints its figures and leaves nothing behind."""

from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command

from judgments.models import Pool, Run
from scoring.models import QueryScore
from tests.bench.bench_compare import Command as BenchCompare


def test_bench_compare_prints_figures_and_cleans_up(db):
    out, err = StringIO(), StringIO()
    call_command(BenchCompare(), queries=60, configurations=4, runs=2, requests=2, stdout=out, stderr=err)
    text = out.getvalue()
    # 4 configurations x 2 runs x 60 queries, 4 flavours each
    assert "4 configurations x 60 queries, 480 stored (run, query) rows = 1,920 scores" in text
    for label in (
        "leaderboard page",
        "A vs B page",
        "matrix page (4 configurations)",
        "target: median <= 300 ms",
    ):
        assert label in text
    assert not Pool.objects.filter(name__startswith="bench-compare-").exists()
    assert not Run.objects.exists() and not QueryScore.objects.exists()
    assert not get_user_model().objects.filter(username__startswith="bench-compare-").exists()
