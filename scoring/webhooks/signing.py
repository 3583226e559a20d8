"""Signing a webhook's body: HMAC-SHA256 over the exact bytes sent, keyed by the webhook's secret, in the
header `X-Signature-256: sha256=<hex>` (GitHub's convention). A receiver recomputes it over the raw body
and compares in constant time (`verify`). Pure: no Django."""

from __future__ import annotations

import hashlib
import hmac

HEADER = "X-Signature-256"
PREFIX = "sha256="


def signature(secret: str, body: bytes) -> str:
    """The header's value for `body`: "sha256=" and the hex HMAC-SHA256."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """True when `header` is the signature of `body` under `secret` (constant-time comparison)."""
    return hmac.compare_digest(signature(secret, body), header or "")
