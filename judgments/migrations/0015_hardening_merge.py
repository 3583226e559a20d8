from django.db import migrations


class Migration(migrations.Migration):
    """Joins this branch's migrations with main's 0014_tune_archive (after 0013_judges_sample_probes)."""

    dependencies = [
        ("judgments", "0014_tune_archive"),
        ("judgments", "0014_hardening_text_limits"),
    ]

    operations = []
