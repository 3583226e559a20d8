from django.db import migrations


class Migration(migrations.Migration):
    """Joins the adaptive branch's 0005 (pool stability) with the measures branch's 0005."""

    dependencies = [
        ("scoring", "0005_adaptive_pool_stability"),
        ("scoring", "0005_measures_pool_measures"),
    ]

    operations = []
