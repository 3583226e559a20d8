"""Endpoint secrets encrypted at rest (judgments.models.secret_fields): the stored secret and the values
of credential-like headers. The columns keep their types; the rows written before are rewritten
encrypted (and back to plain text when migrating backwards)."""

import json

from django.db import migrations

import judgments.models.secret_fields


def encrypt_stored(apps, schema_editor):
    # The historical model has the new fields: a value written before reads as is (no prefix) and is
    # encrypted when written back.
    SearchEndpoint = apps.get_model("judgments", "SearchEndpoint")
    for endpoint in SearchEndpoint.objects.only("pk", "auth_secret", "headers").iterator():
        SearchEndpoint.objects.filter(pk=endpoint.pk).update(
            auth_secret=endpoint.auth_secret, headers=endpoint.headers
        )


def decrypt_stored(apps, schema_editor):
    from judgments.models.secret_fields import decrypt

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id, auth_secret, headers FROM judgments_searchendpoint")
        for pk, secret, headers in cursor.fetchall():
            headers = [[n, decrypt(v) if isinstance(v, str) else v] for n, v in headers or []]
            cursor.execute(
                "UPDATE judgments_searchendpoint SET auth_secret = %s, headers = %s::jsonb WHERE id = %s",
                [decrypt(secret), json.dumps(headers), pk],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0009_pool_distractors"),
    ]

    operations = [
        migrations.AlterField(
            model_name="searchendpoint",
            name="auth_secret",
            field=judgments.models.secret_fields.EncryptedTextField(
                blank=True, help_text="write-only: never shown back; encrypted"
            ),
        ),
        migrations.AlterField(
            model_name="searchendpoint",
            name="headers",
            field=judgments.models.secret_fields.SecretHeadersField(
                blank=True,
                default=list,
                help_text='[["Name", "value"], ...]; credential-like values encrypted',
            ),
        ),
        migrations.RunPython(encrypt_stored, decrypt_stored),
    ]
