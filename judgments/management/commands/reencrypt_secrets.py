"""manage.py reencrypt_secrets: rewrite every stored endpoint secret under the current SECRET_KEY
(after a key change, with the old key in SECRET_KEY_FALLBACKS; judgments.models.secret_fields)."""

import json
import logging

from cryptography.fernet import InvalidToken
from django.core.management.base import BaseCommand
from django.db import connection, transaction

from judgments.endpoints.engines import is_sensitive_header
from judgments.models import SearchEndpoint
from judgments.models.secret_fields import current_keys, is_pair, reencrypted

logger = logging.getLogger(__name__)


def reencrypt_all() -> int:
    """Rewrite every stored secret under the current SECRET_KEY; returns the rows rewritten. Works on the
    stored tokens (MultiFernet.rotate), never through the fields' reading: a row that no key opens is left
    exactly as it is (and logged), so running this without the old key loses nothing."""
    table = connection.ops.quote_name(SearchEndpoint._meta.db_table)
    keys, count, unreadable = current_keys(), 0, 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT id, auth_secret, headers FROM {table} FOR UPDATE")
        for pk, secret, headers in cursor.fetchall():
            headers = json.loads(headers) if isinstance(headers, str) else headers
            try:
                secret = reencrypted(secret, keys)
                if isinstance(headers, list):
                    headers = [
                        [item[0], reencrypted(item[1], keys)]
                        if is_pair(item) and isinstance(item[1], str) and is_sensitive_header(str(item[0]))
                        else item
                        for item in headers
                    ]
            except (InvalidToken, ValueError):
                unreadable += 1
                continue
            cursor.execute(
                f"UPDATE {table} SET auth_secret = %s, headers = %s::jsonb WHERE id = %s",
                [secret, json.dumps(headers), pk],
            )
            count += 1
    if unreadable:
        logger.error(
            "%d endpoint(s) hold a secret that neither SECRET_KEY nor SECRET_KEY_FALLBACKS opens; left as they "
            "are (add the old key to SECRET_KEY_FALLBACKS and run this again)",
            unreadable,
        )
    return count


class Command(BaseCommand):
    help = "Rewrite every stored endpoint secret under the current SECRET_KEY (old keys in SECRET_KEY_FALLBACKS)."

    def handle(self, *args, **options):
        count = reencrypt_all()
        self.stdout.write(f"{count} endpoint version(s) rewritten under the current SECRET_KEY.\n")
