"""The pool's webhooks page and the pool page's webhook section."""

from scoring.webhooks import events
from scoring.webhooks.models import Webhook, WebhookDelivery
from tests.conftest import login

SECRET = "page-secret-123"


def test_an_engineer_adds_a_webhook_and_sees_deliveries_with_status_codes(client, pool, engineer):
    login(client, engineer)
    page = f"/pools/{pool.name}/webhooks/"
    response = client.post(
        page,
        {
            "action": "add",
            "url": "https://chat.example.com/hook",
            "secret": SECRET,
            "events": ["gate.failed"],
        },
    )
    assert response.status_code == 302
    hook = Webhook.objects.get(pool=pool)
    assert (hook.url, hook.events, hook.secret) == ("https://chat.example.com/hook", ["gate.failed"], SECRET)
    WebhookDelivery.objects.create(
        webhook=hook,
        event="gate.failed",
        body="{}",
        status="failed",
        status_code=500,
        attempts=6,
        error="HTTP 500 Internal Server Error",
    )
    html = client.get(page).content.decode()
    assert "https://chat.example.com/hook" in html and SECRET not in html
    assert 'data-status="failed"' in html and ">500<" in html
    detail = client.get(f"/pools/{pool.name}/").content.decode()
    assert 'id="webhooks"' in detail and ">500<" in detail and SECRET not in detail


def test_a_url_that_is_not_http_is_refused_on_the_page(client, pool, engineer):
    login(client, engineer)
    response = client.post(
        f"/pools/{pool.name}/webhooks/", {"action": "add", "url": "ftp://x/y", "secret": SECRET}
    )
    assert response.status_code == 200
    assert "must be http:// or https://" in response.content.decode()
    assert not Webhook.objects.exists()


def test_remove_and_who_may_see(client, pool, engineer, rater, outsider):
    hook = events.add_webhook(pool, "http://127.0.0.1:9/hook", SECRET)
    for user in (rater, outsider):
        login(client, user)
        assert client.get(f"/pools/{pool.name}/webhooks/").status_code == 404
        assert (
            client.post(f"/pools/{pool.name}/webhooks/", {"action": "remove", "webhook": hook.pk}).status_code
            == 404
        )
    login(client, rater)
    assert 'id="webhooks"' not in client.get(f"/pools/{pool.name}/").content.decode()
    assert Webhook.objects.filter(pk=hook.pk).exists()
    login(client, engineer)
    client.post(f"/pools/{pool.name}/webhooks/", {"action": "remove", "webhook": hook.pk})
    assert not Webhook.objects.exists()
