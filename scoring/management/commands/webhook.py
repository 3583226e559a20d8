"""`manage.py webhook --pool P --add URL [--event E ...] [--secret-env NAME]` (else the secret is read
from stdin), `--list` (webhooks and their latest deliveries with status codes), `--remove ID`."""

import os
import sys

from django.core.management.base import BaseCommand, CommandError

from judgments.exchange.cli import get_pool
from scoring.webhooks import events
from scoring.webhooks.models import Event, Webhook, WebhookDelivery


class Command(BaseCommand):
    help = "Add, list or remove a pool's webhooks (signed POSTs on run.scored, capture.failed, gate.failed, capture.drop)."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="pool name")
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--add", metavar="URL", help="add a webhook POSTing to this http(s) URL")
        action.add_argument(
            "--list", dest="show", action="store_true", help="list the webhooks and latest deliveries"
        )
        action.add_argument("--remove", metavar="ID", type=int, help="remove a webhook")
        parser.add_argument(
            "--event",
            action="append",
            default=[],
            choices=Event.values,
            help="an event to send (default: all)",
        )
        parser.add_argument(
            "--secret-env", metavar="NAME", help="read the secret from this environment variable (else stdin)"
        )

    def handle(self, *args, pool, add, show, remove, event, secret_env, **options):
        found = get_pool(pool)
        if add is not None:
            secret = os.environ.get(secret_env, "") if secret_env else sys.stdin.readline()
            try:
                hook = events.add_webhook(found, add, secret.strip(), event)
            except events.WebhookError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(
                f"webhook {hook.pk} of {found.name}: {hook.url} ({', '.join(hook.events) or 'every event'})"
            )
        elif remove is not None:
            removed, _ = Webhook.objects.filter(pool=found, pk=remove).delete()
            if not removed:
                raise CommandError(f"Pool {found.name} has no webhook {remove}.")
            self.stdout.write(f"webhook {remove} removed")
        else:
            for hook in Webhook.objects.filter(pool=found):
                self.stdout.write(
                    f"webhook {hook.pk}: {hook.url} ({', '.join(hook.events) or 'every event'}; secret set)"
                )
            for d in WebhookDelivery.objects.filter(webhook__pool=found).select_related("webhook")[:20]:
                self.stdout.write(
                    f"  {d.created_at:%Y-%m-%d %H:%M:%S} {d.event} -> webhook {d.webhook_id}: {d.status} "
                    f"{d.status_code or '-'} after {d.attempts} attempt(s){' ' + d.error if d.error else ''}"
                )
