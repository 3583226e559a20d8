"""UDCG stored (issue 13): four columns of CellScore, and the QueryScore view shows them in every
flavour's branch. Rows stored before hold NaN until their cells are rescored (`manage.py score --pool P`,
or any grade or run change of the query): the leaderboard shows "—" for a mean that is not a number."""

from django.db import migrations, models

FLAVOURS = [("exp", "zero"), ("trec", "zero"), ("jk", "zero"), ("judged", "drop")]
CUTOFFS = ("3", "5", "10", "100")
NDCG = [f"ndcg_{k}" for k in CUTOFFS]
MODE = [f"p_{k}" for k in CUTOFFS] + [f"recall_{k}" for k in CUTOFFS] + ["mrr", "ap"]
JUDGED = [f"judged_{k}" for k in CUTOFFS]
UDCG = [f"udcg_{k}" for k in CUTOFFS]


def _view(extra):
    def branch(position, flavour, unjudged):
        prefix = "c_" if unjudged == "drop" else ""
        columns = (
            [f"s.{flavour}_{c} AS {c}" for c in NDCG]
            + [f"s.{prefix}{c} AS {c}" for c in MODE]
            + [f"s.{c}" for c in JUDGED + extra]
        )
        return (
            f"SELECT s.id * {len(FLAVOURS)} + {position} AS id, s.run_id, s.query_id, "
            f"'{flavour}'::varchar(10) AS flavor, s.has_ranking, s.has_relevant, {', '.join(columns)}, "
            "s.updated_at FROM scoring_cellscore s"
        )

    return "CREATE VIEW scoring_queryscore AS " + " UNION ALL ".join(
        branch(position, flavour, unjudged) for position, (flavour, unjudged) in enumerate(FLAVOURS)
    )


class Migration(migrations.Migration):
    dependencies = [("scoring", "0002_wide_scores")]

    operations = [
        *(
            migrations.AddField(
                model_name="cellscore",
                name=column,
                field=models.FloatField(default=float("nan")),
                preserve_default=False,
            )
            for column in UDCG
        ),
        migrations.RunSQL(
            ["DROP VIEW scoring_queryscore", _view(UDCG)],
            ["DROP VIEW scoring_queryscore", _view([])],
            state_operations=[
                migrations.AddField(model_name="queryscore", name=column, field=models.FloatField())
                for column in UDCG
            ],
        ),
    ]
