"""The pool page's webhook section: the pool's webhooks and their latest deliveries with status codes
(engineers and admins; the page itself belongs to the judgments core, which imports no scoring code, so
the section comes as an inclusion tag)."""

from django import template

from judgments import access
from scoring.webhooks.models import Webhook, WebhookDelivery

register = template.Library()
LATEST = 10


@register.inclusion_tag("scoring/_pool_webhooks.html", takes_context=True)
def pool_webhooks(context, pool):
    user = context["request"].user
    if not access.scored_pools_for(user).filter(pk=pool.pk).exists():
        return {"shown": False}
    return {
        "shown": True,
        "pool": pool,
        "webhooks": Webhook.objects.filter(pool=pool).count(),
        "deliveries": WebhookDelivery.objects.filter(webhook__pool=pool).select_related("webhook")[:LATEST],
    }
