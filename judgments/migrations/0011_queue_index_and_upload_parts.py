"""Two changes for load (issue 16):

- document_without_content: a partial index of the documents still waiting for content. Scans of a
  whole judging queue leave those pairs out with an anti-join on it instead of reading every document's
  title and body (judgments.rating.grading).
- An upload's file moves from one bytea value (Upload.content, read and written whole) into UploadPart
  rows of at most a mebibyte, written and read one at a time (judgments.exchange.uploads). Pending
  uploads keep their content: each becomes one part. Upload gets its size and line count.
"""

import django.db.models.deletion
from django.db import migrations, models

TO_PARTS = """
INSERT INTO judgments_uploadpart (upload_id, number, data) SELECT id, 0, content FROM judgments_upload;
UPDATE judgments_upload u SET size = length(u.content),
    lines = (SELECT length(t) - length(replace(t, E'\\n', '')) FROM encode(u.content, 'escape') t)
        + CASE WHEN length(u.content) > 0 AND get_byte(u.content, length(u.content) - 1) <> 10 THEN 1 ELSE 0 END;
"""

FROM_PARTS = """
UPDATE judgments_upload u SET content = COALESCE(
    (SELECT string_agg(p.data, ''::bytea ORDER BY p.number) FROM judgments_uploadpart p WHERE p.upload_id = u.id),
    ''::bytea);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0010_encrypted_endpoint_secrets"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="document",
            index=models.Index(
                condition=models.Q(("body", ""), ("title", "")),
                fields=["pool", "id"],
                name="document_without_content",
            ),
        ),
        migrations.CreateModel(
            name="UploadPart",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                (
                    "upload",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="parts",
                        to="judgments.upload",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("upload", "number"), name="one_upload_part_per_number")
                ],
            },
        ),
        migrations.AddField(model_name="upload", name="lines", field=models.BigIntegerField(default=0)),
        migrations.AddField(model_name="upload", name="size", field=models.BigIntegerField(default=0)),
        migrations.RunSQL(TO_PARTS, FROM_PARTS),
        migrations.RemoveField(model_name="upload", name="content"),
    ]
