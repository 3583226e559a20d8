from django.apps import AppConfig
from django.db.models.signals import post_migrate


class JudgmentsConfig(AppConfig):
    name = "judgments"
    verbose_name = "Judgments"

    def ready(self) -> None:
        from .access import ensure_role_groups

        post_migrate.connect(ensure_role_groups, sender=self)
