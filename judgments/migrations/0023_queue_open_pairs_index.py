"""The missing-content list walks queued pairs without a final grade by their stored human grades
(Pair.human_grades, kept by 0020_submit_tallies' triggers): one index scan per grade count below the pool's
raters_per_pair, so complete pairs are never read. Replaces boards' pair_unfinished_queue_idx, which only
that list used."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("judgments", "0022_merge_speed")]

    operations = [
        migrations.RemoveIndex(model_name="pair", name="pair_unfinished_queue_idx"),
        migrations.AddIndex(
            model_name="pair",
            index=models.Index(
                condition=models.Q(("final_grade__isnull", True), ("queued_at__isnull", False)),
                fields=["pool", "human_grades", "-priority", "-id"],
                name="pair_open_by_grades_idx",
            ),
        ),
    ]
