"""Endpoint secrets at rest: encrypted with a key derived from SECRET_KEY, readable through the model only."""

import importlib
import logging
from io import StringIO

from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from judgments.capture import services
from judgments.management.commands.reencrypt_secrets import reencrypt_all
from judgments.models.capture import SearchEndpoint
from judgments.models.secret_fields import PREFIX

SECRET = "s3cr3t-Value-42"
HEADER_KEY = "hdr-KEY-9876"


def _raw(endpoint):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT auth_secret, headers::text FROM judgments_searchendpoint WHERE id = %s", [endpoint.pk]
        )
        return cursor.fetchone()


def _endpoint(configuration):
    endpoint, _ = services.set_endpoint(
        configuration,
        kind="elasticsearch",
        url="http://127.0.0.1:9200/docs/_search",
        headers=[["X-Api-Key", HEADER_KEY], ["X-Tenant", "acme"]],
        auth_kind="basic",
        auth_user="reader",
        auth_secret=SECRET,
    )
    return endpoint


def test_the_stored_secret_and_credential_headers_are_encrypted_and_read_back(configuration):
    endpoint = _endpoint(configuration)
    secret, headers = _raw(endpoint)
    assert secret.startswith(PREFIX) and SECRET not in secret
    assert HEADER_KEY not in headers and PREFIX in headers and '"acme"' in headers  # only credentials
    loaded = SearchEndpoint.objects.get(pk=endpoint.pk)
    assert loaded.auth_secret == SECRET
    assert loaded.headers == [["X-Api-Key", HEADER_KEY], ["X-Tenant", "acme"]]
    assert loaded.spec().request_headers()["X-Api-Key"] == HEADER_KEY
    # Saving again does not change what it means (a new random token, the same secret).
    loaded.save()
    assert SearchEndpoint.objects.get(pk=endpoint.pk).auth_secret == SECRET
    # An unchanged definition is recognised as unchanged: no new version.
    same, changed = services.set_endpoint(
        configuration,
        kind="elasticsearch",
        url="http://127.0.0.1:9200/docs/_search",
        headers=[["X-Api-Key", "***"], ["X-Tenant", "acme"]],
        auth_kind="basic",
        auth_user="reader",
    )
    assert (same.pk, changed) == (endpoint.pk, False)


def test_a_changed_secret_key_reads_through_the_fallback_and_reencrypt_moves_to_the_new_key(
    configuration, settings, caplog
):
    old = settings.SECRET_KEY
    endpoint = _endpoint(configuration)
    with override_settings(SECRET_KEY="a-new-key-" + "x" * 40, SECRET_KEY_FALLBACKS=[old]):
        assert SearchEndpoint.objects.get(pk=endpoint.pk).auth_secret == SECRET
        out = StringIO()
        call_command("reencrypt_secrets", stdout=out)
        assert out.getvalue().startswith("1 endpoint version(s) rewritten")
    with override_settings(SECRET_KEY="a-new-key-" + "x" * 40, SECRET_KEY_FALLBACKS=[]):
        assert SearchEndpoint.objects.get(pk=endpoint.pk).auth_secret == SECRET
    # The old key alone no longer opens it: read as not set, logged, never shown or raised.
    with caplog.at_level(logging.ERROR):
        loaded = SearchEndpoint.objects.get(pk=endpoint.pk)
    assert loaded.auth_secret == "" and loaded.secret_state == "not set"
    assert "cannot be decrypted" in caplog.text and SECRET not in caplog.text


def test_the_migration_encrypts_secrets_stored_before_it(configuration):
    endpoint = _endpoint(configuration)
    with connection.cursor() as cursor:  # as 0007 stored them: plain text
        cursor.execute(
            "UPDATE judgments_searchendpoint SET auth_secret = %s, headers = %s::jsonb WHERE id = %s",
            [SECRET, f'[["X-Api-Key", "{HEADER_KEY}"]]', endpoint.pk],
        )
    assert SearchEndpoint.objects.get(pk=endpoint.pk).auth_secret == SECRET  # plain reads as is
    migration = importlib.import_module("judgments.migrations.0010_encrypted_endpoint_secrets")
    migration.encrypt_stored(apps, None)
    secret, headers = _raw(endpoint)
    assert secret.startswith(PREFIX) and HEADER_KEY not in headers
    assert SearchEndpoint.objects.get(pk=endpoint.pk).headers == [["X-Api-Key", HEADER_KEY]]


def test_dumpdata_writes_tokens_and_loaddata_reads_them_back(configuration, tmp_path):
    from django.core.management import call_command

    endpoint = _endpoint(configuration)
    fixture = tmp_path / "endpoints.json"
    call_command("dumpdata", "judgments.searchendpoint", output=str(fixture))
    text = fixture.read_text()
    assert SECRET not in text and HEADER_KEY not in text and PREFIX in text
    SearchEndpoint.objects.filter(pk=endpoint.pk).update(auth_secret="", headers=[])
    call_command("loaddata", str(fixture), verbosity=0)
    loaded = SearchEndpoint.objects.get(pk=endpoint.pk)
    assert loaded.auth_secret == SECRET and loaded.headers[0] == ["X-Api-Key", HEADER_KEY]
    assert _raw(loaded)[0].startswith(PREFIX)


def test_reencrypting_without_the_old_key_loses_nothing(configuration, caplog):
    endpoint = _endpoint(configuration)
    before = _raw(endpoint)
    with override_settings(SECRET_KEY="a-new-key-" + "y" * 40, SECRET_KEY_FALLBACKS=[]):
        with caplog.at_level(logging.ERROR):
            assert reencrypt_all() == 0
    assert _raw(endpoint) == before  # the tokens stay as they were, not overwritten with ""
    assert "left as they are" in caplog.text and SECRET not in caplog.text
    assert SearchEndpoint.objects.get(pk=endpoint.pk).auth_secret == SECRET  # the right key still opens it
