from django.db import migrations


class Migration(migrations.Migration):
    """Joins the adaptive branch's migrations (0013-0015) with the judges branch's 0013."""

    dependencies = [
        ("judgments", "0013_judges_sample_probes"),
        ("judgments", "0015_adaptive_rater_status"),
    ]

    operations = []
