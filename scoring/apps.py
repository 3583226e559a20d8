from django.apps import AppConfig
from django.db.models.signals import post_save, pre_save


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        # Stored scores follow every grade and run as soon as its transaction commits (scoring.receivers).
        from judgments import snapshots
        from judgments.models import Pool
        from judgments.signals import capture_failed, grades_changed, run_submitted

        from . import receivers

        grades_changed.connect(receivers.on_grades_changed, dispatch_uid="scoring.grades_changed")
        run_submitted.connect(receivers.on_run_submitted, dispatch_uid="scoring.run_submitted")
        capture_failed.connect(receivers.on_capture_failed, dispatch_uid="scoring.capture_failed")
        pre_save.connect(receivers.remember_combine_rule, sender=Pool, dispatch_uid="scoring.pool_pre_save")
        post_save.connect(receivers.on_pool_saved, sender=Pool, dispatch_uid="scoring.pool_post_save")
        # The heavy statistics' stored snapshots (judgments.snapshots; computed in scoring.snapshots).
        snapshots.register("agreement", "scoring.snapshots.agreement_value")
        snapshots.register("disagreements", "judgments.rating.adjudication.disagreements_value")
        snapshots.register("judge", "judgments.judges.services.judge_counts", "scoring.snapshots.judge_keys")
        snapshots.register("trust", "scoring.snapshots.trust_value", "scoring.snapshots.judge_keys")
        snapshots.register(
            "estimates", "scoring.snapshots.estimates_value", "scoring.snapshots.estimate_keys"
        )
        snapshots.register("assessors", "scoring.assessors.snapshot_value")
        snapshots.register("rater_quality", "judgments.rating.quality.rater_value")
