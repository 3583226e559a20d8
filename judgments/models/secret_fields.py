"""Endpoint secrets encrypted at rest: model fields that store a stored secret and the values of
credential-like headers as Fernet tokens (cryptography: AES-128-CBC with HMAC-SHA256, a random IV per
value), decrypted only when a row is loaded.

The key is derived from SECRET_KEY with HKDF-SHA256 (its own `info`, so it is used for nothing else).
After a change of SECRET_KEY, the old key in SECRET_KEY_FALLBACKS keeps the stored secrets readable, and
every secret stored from then on uses the new key; `manage.py reencrypt_secrets` rewrites the old ones. A stored value that no key
opens is read as "" (the endpoint then says its secret is not set) and logged, never raised: the pages
that list endpoints keep working, and a capture says what is missing.

What is encrypted: `SearchEndpoint.auth_secret`, and the value of every header whose name looks like a
credential (engines.is_sensitive_header: Authorization, X-Api-Key, Cookie...). A key written into the URL
or the template stays as written (it is redacted on pages, but a secret belongs in auth or in an
environment variable). A database dump, a backup or a read-only SQL user sees tokens, not secrets.
"""

from __future__ import annotations

import base64
import logging
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

from ..endpoints.engines import is_sensitive_header

logger = logging.getLogger(__name__)
PREFIX = "fernet:"
_INFO = b"judgment-lists: search endpoint secrets at rest"


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    derived = []
    for key in keys:
        raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(key.encode())
        derived.append(Fernet(base64.urlsafe_b64encode(raw)))
    return MultiFernet(derived)


def current_keys() -> MultiFernet:
    """SECRET_KEY's derived key first (it encrypts), then SECRET_KEY_FALLBACKS' (they still decrypt)."""
    return _fernet((settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())))


def encrypt(value: str) -> str:
    """`value` as stored: "" stays "", anything else a prefixed Fernet token."""
    if not value:
        return value
    return PREFIX + current_keys().encrypt(value.encode()).decode("ascii")


def decrypt(stored: str) -> str:
    """The secret back; a value without the prefix (written before encryption) is returned as is."""
    if not stored or not stored.startswith(PREFIX):
        return stored
    try:
        return current_keys().decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, ValueError):
        logger.error(
            "a stored endpoint secret cannot be decrypted with SECRET_KEY or SECRET_KEY_FALLBACKS "
            "(was SECRET_KEY changed? add the old one to SECRET_KEY_FALLBACKS); it reads as not set"
        )
        return ""


class EncryptedTextField(models.TextField):
    """A TextField whose value is stored encrypted (see the module doc)."""

    def from_db_value(self, value, expression, connection):
        return decrypt(value) if value is not None else value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return encrypt(value) if isinstance(value, str) else value

    def to_python(self, value):  # a fixture (loaddata) holds the token that value_to_string wrote
        return decrypt(value) if isinstance(value, str) else value

    def value_to_string(self, obj):  # dumpdata writes the token, never the secret
        return encrypt(self.value_from_object(obj) or "")


class SecretHeadersField(models.JSONField):
    """[[name, value], ...] with the values of credential-like headers stored encrypted."""

    def from_db_value(self, value, expression, connection):
        return _decrypted_headers(super().from_db_value(value, expression, connection))

    def get_prep_value(self, value):
        return super().get_prep_value(_encrypted_headers(value))

    def to_python(self, value):  # a fixture (loaddata) holds tokens, as value_to_string wrote them
        return _decrypted_headers(value)

    def value_to_string(self, obj):  # dumpdata writes tokens, never the secrets
        return _encrypted_headers(self.value_from_object(obj))


def _encrypted_headers(value):
    if not isinstance(value, list | tuple):
        return value
    return [
        [str(item[0]), encrypt(str(item[1]))] if is_pair(item) and is_sensitive_header(str(item[0])) else item
        for item in value
    ]


def _decrypted_headers(value):
    if not isinstance(value, list):
        return value
    return [
        [item[0], decrypt(item[1])] if is_pair(item) and isinstance(item[1], str) else item for item in value
    ]


def is_pair(item) -> bool:
    return isinstance(item, list | tuple) and len(item) == 2


def reencrypted(stored: str, keys: MultiFernet) -> str:
    """`stored` under the current key: a token rotated (InvalidToken when no key opens it), a value
    written before encryption encrypted."""
    if not stored:
        return stored
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    return PREFIX + keys.rotate(stored[len(PREFIX) :].encode("ascii")).decode("ascii")
