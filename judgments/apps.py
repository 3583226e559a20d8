from django.apps import AppConfig
from django.db.models.signals import post_migrate


class JudgmentsConfig(AppConfig):
    name = "judgments"
    verbose_name = "Judgments"

    def ready(self) -> None:
        from . import snapshots
        from .access import ensure_role_groups
        from .signals import grades_changed, run_submitted

        post_migrate.connect(ensure_role_groups, sender=self)
        # Heavy statistics are stored snapshots: the writes that change them mark the pool (judgments.snapshots).
        grades_changed.connect(snapshots.on_grades_changed, dispatch_uid="judgments.snapshots.grades")
        run_submitted.connect(snapshots.on_run_submitted, dispatch_uid="judgments.snapshots.runs")
