"""The pool's webhooks page (`/pools/<pool>/webhooks/`): engineers of the pool and admins add and remove
webhooks and see every delivery with its status code. The pool's page shows the latest deliveries too
(scoring/templatetags/webhook_tags.py)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from judgments import access

from . import events
from .models import Event, Webhook, WebhookDelivery

LISTED = 100  # deliveries on the page


class WebhookForm(forms.Form):
    url = forms.CharField(label="URL", max_length=2000, help_text="http:// or https://")
    secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        max_length=500,
        help_text="the receiver checks X-Signature-256 (HMAC-SHA256 of the body) with it; never shown back",
    )
    events = forms.MultipleChoiceField(
        choices=Event.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="none ticked: every event",
    )

    def clean_url(self) -> str:
        try:
            return events.check_url(self.cleaned_data["url"])
        except events.WebhookError as exc:
            raise forms.ValidationError(str(exc)) from None


@require_http_methods(["GET", "POST"])
def webhooks_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.get_pool_or_404(request.user, access.scored_pools_for, name=pool_name)
    form = WebhookForm(request.POST if request.POST.get("action") == "add" else None)
    if request.method == "POST":
        if request.POST.get("action") == "remove":
            removed, _ = Webhook.objects.filter(pool=found, pk=request.POST.get("webhook") or 0).delete()
            if removed:
                messages.success(request, "Webhook removed.")
            return redirect("scoring:webhooks", found.name)
        if form.is_valid():
            data = form.cleaned_data
            hook = events.add_webhook(found, data["url"], data["secret"], data["events"], request.user)
            messages.success(request, f"Webhook {hook.pk} added: {hook.url}")
            return redirect("scoring:webhooks", found.name)
    hooks = list(Webhook.objects.filter(pool=found))
    deliveries = WebhookDelivery.objects.filter(webhook__pool=found).select_related("webhook")[:LISTED]
    return render(
        request,
        "scoring/webhooks.html",
        {"pool": found, "form": form, "webhooks": hooks, "deliveries": deliveries, "events": Event},
    )
