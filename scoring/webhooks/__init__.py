"""Webhooks of a pool: signed POSTs when a run is stored and scored, a capture fails, a gate fails, or a
scheduled capture's mean drops below the band of its recent history.

models (Webhook, WebhookDelivery; registered with the scoring app through scoring/models.py), signing
(HMAC-SHA256 of the body; pure), events (what is sent when: a delivery row and a queued task, nothing
slow in the caller's path), tasks (the POST, its retries with backoff), views (the pool's webhooks page).
"""
