"""An uploaded file kept between preview and confirm, in parts: no process holds the whole file to store
it or read it back.

`store` writes the file (the request's temporary file, read PART_BYTES at a time) as UploadPart rows
with one COPY, counting its bytes and lines on the way; `open_content` reads it back as a binary file
that fetches one part at a time; `head` reads the start for the preview. An import of a file larger
than settings.UPLOAD_CHILD_MB runs in a child process (judgments.exchange.upload_import), so the
parser's working memory (several times the file for a run's fast path) never stays with a web worker.
"""

from __future__ import annotations

import io

from django.db import connection, transaction

from judgments.models import Upload, UploadPart

PART_BYTES = 1 << 20


def measure(upload: Upload, file) -> Upload:
    """Set `upload`'s size and line count from `file` (read part by part, then rewound)."""
    size = lines = 0
    last = b"\n"
    while chunk := file.read(PART_BYTES):
        size += len(chunk)
        lines += chunk.count(b"\n")
        last = chunk[-1:]
    file.seek(0)
    upload.size, upload.lines = size, lines + (last != b"\n")
    return upload


def store(upload: Upload, file) -> Upload:
    """Save `upload` with the content of `file` (a binary file object, read from where it is)."""
    size = lines = 0
    last = b"\n"
    with transaction.atomic():
        upload.save()
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY {UploadPart._meta.db_table} (upload_id, number, data) FROM STDIN") as copy,
        ):
            number = 0
            while chunk := file.read(PART_BYTES):
                copy.write_row((upload.pk, number, chunk))
                size += len(chunk)
                lines += chunk.count(b"\n")
                last = chunk[-1:]
                number += 1
        upload.size, upload.lines = size, lines + (last != b"\n")
        Upload.objects.filter(pk=upload.pk).update(size=upload.size, lines=upload.lines)
    return upload


def store_bytes(upload: Upload, data: bytes) -> Upload:
    """`store` for content at hand (tests, small files)."""
    return store(upload, io.BytesIO(data))


class _PartReader(io.RawIOBase):
    """The parts of an upload, in order, as a raw binary stream: one part in memory at a time."""

    def __init__(self, upload_id: int):
        self.upload_id = upload_id
        self.number = 0
        self.buffer = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        if not self.buffer:
            row = (
                UploadPart.objects.filter(upload_id=self.upload_id, number=self.number)
                .values_list("data", flat=True)
                .first()
            )
            if row is None:
                return 0
            self.buffer = memoryview(bytes(row))
            self.number += 1
        n = min(len(target), len(self.buffer))
        target[:n] = self.buffer[:n]
        self.buffer = self.buffer[n:]
        return n


def open_content(upload: Upload) -> io.BufferedReader:
    """The upload's file as a binary file object, read part by part."""
    return io.BufferedReader(_PartReader(upload.pk), buffer_size=PART_BYTES)


def head(upload: Upload, limit: int = 64 * 1024) -> bytes:
    """The first `limit` bytes of the upload's file (for the preview)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT substring(data FROM 1 FOR %s) FROM {UploadPart._meta.db_table}"
            " WHERE upload_id = %s AND number = 0",
            [limit, upload.pk],
        )
        row = cursor.fetchone()
    return bytes(row[0]) if row else b""
