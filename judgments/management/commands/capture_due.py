from django.core.management.base import BaseCommand, CommandError

from judgments.capture import cli, services
from judgments.models.capture import CaptureJob


class Command(BaseCommand):
    help = (
        "Capture a run of every configuration whose capture schedule (hourly, daily, weekly) is due, one "
        "after another, in this process. For cron, e.g. every 10 minutes: "
        "*/10 * * * * cd /srv/judgments && .venv/bin/python manage.py capture_due. Exit 1 if any failed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list the due configurations only")

    def handle(self, *args, dry_run, **options):
        due = services.due_configurations()
        if not due:
            self.stdout.write("No capture is due.")
            return
        if dry_run:
            for config in due:
                self.stdout.write(f"due: {config.pool.name}/{config.name} ({config.capture_schedule})")
            return
        failed = []
        with cli.cancel_on_signals() as cancel:
            for config in due:
                if cancel.is_set():
                    break
                try:
                    job = services.start_capture(config, trigger=CaptureJob.Trigger.SCHEDULE)
                except services.CaptureError as exc:  # started elsewhere meanwhile
                    self.stderr.write(f"{config.pool.name}/{config.name}: skipped: {exc}")
                    continue
                job = cli.run_with_progress(self, job, cancel)
                if not cli.report(self, job):
                    self.stderr.write(f"{config.pool.name}/{config.name}: {job.message}")
                    failed.append(config.name)
        if failed:
            raise CommandError(f"{len(failed)} of {len(due)} captures stored nothing: {', '.join(failed)}")
