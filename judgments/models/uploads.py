"""Files uploaded through the web, kept in parts between preview and confirm."""

from django.conf import settings
from django.db import models

from .pools import Pool


class Upload(models.Model):
    """A file uploaded through the web, kept between preview and confirm (the web tier keeps no state).
    Its content is in `parts` (judgments.exchange.uploads writes and reads them)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="uploads")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, models.CASCADE, related_name="+")
    kind = models.CharField(max_length=30)
    filename = models.CharField(max_length=255)
    size = models.BigIntegerField(default=0)  # bytes
    lines = models.BigIntegerField(default=0)  # a last line without its newline counts
    options = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} upload {self.filename}"


class UploadPart(models.Model):
    """A piece of an upload's file, in order: no process holds a whole file to store or read it."""

    upload = models.ForeignKey(Upload, models.CASCADE, related_name="parts")
    number = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["upload", "number"], name="one_upload_part_per_number")
        ]

    def __str__(self) -> str:
        return f"part {self.number} of upload {self.upload_id}"
