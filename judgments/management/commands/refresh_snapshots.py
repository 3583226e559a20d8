from django.core.management.base import BaseCommand, CommandError

from judgments import snapshots
from judgments.models import Pool


class Command(BaseCommand):
    help = (
        "Compute the stored snapshots (agreement, judges' trust, estimates) of a pool that changed since "
        "they were computed, or of every pool; --force recomputes them even if nothing changed. The worker "
        "does this by itself after a change (judgments.snapshots); this is for an existing pool's first "
        "figures and for operators."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", help="pool name (default: every pool)")
        parser.add_argument("--force", action="store_true", help="recompute even if nothing changed")

    def handle(self, *args, pool, force, **options):
        pools = Pool.objects.order_by("name")
        if pool:
            pools = pools.filter(name=pool)
            if not pools.exists():
                raise CommandError(f"No pool named {pool!r}.")
        for found in pools:
            done = snapshots.refresh(found, force=force)
            if done.skipped:
                self.stdout.write(f"{found.name}: unchanged, nothing computed")
                continue
            what = ", ".join(done.computed) or "nothing"
            self.stdout.write(f"{found.name}: computed {what} in {done.seconds:.1f} s")
