from django.db import migrations


class Migration(migrations.Migration):
    """Joins the adaptive branch's migrations (after 0016) with the tune branch's 0014."""

    dependencies = [
        ("judgments", "0014_tune_archive"),
        ("judgments", "0016_merge_adaptive_judges"),
    ]

    operations = []
