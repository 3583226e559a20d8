"""A web upload kept in parts (judgments.exchange.uploads), and a large one imported by a child process
(judgments.exchange.upload_import): the same pages, problems and stored rows as in the web process."""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judgments import services
from judgments.exchange import upload_import, uploads
from judgments.models import Run, Upload, UploadPart


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(uploads, "PART_BYTES", 7)


@pytest.mark.parametrize(
    ("content", "lines"),
    [(b"", 0), (b"one line\n", 1), (b"no newline", 1), (b"a\nb\nc\n" * 5 + b"tail", 16), (b"\n\n", 2)],
)
def test_an_upload_is_stored_in_parts_and_read_back_whole(small_parts, pool, site_admin, content, lines):
    upload = Upload(pool=pool, uploaded_by=site_admin, kind="queries", filename="q.tsv")
    uploads.store(upload, io.BytesIO(content))
    assert (upload.size, upload.lines) == (len(content), lines)
    assert Upload.objects.filter(pk=upload.pk, size=len(content), lines=lines).exists()
    assert UploadPart.objects.filter(upload=upload).count() == -(-len(content) // 7)
    assert uploads.open_content(upload).read() == content
    reader = uploads.open_content(upload)
    assert b"".join(iter(lambda: reader.read(3), b"")) == content  # small reads across parts
    assert uploads.head(upload, 5) == content[:5]
    measured = Upload()
    uploads.measure(measured, io.BytesIO(content))
    assert (measured.size, measured.lines) == (len(content), lines)
    upload.delete()
    assert not UploadPart.objects.exists()


@pytest.fixture
def in_a_child(settings, transactional_db, monkeypatch):
    """Every upload is checked and imported by a child process (the limit is 0 MB); its data must be
    committed for the child to see it, hence transactional_db. Yields the children's commands."""
    settings.UPLOAD_CHILD_MB = 0
    started = []
    real_run = upload_import.subprocess.run

    def run(command, **kwargs):
        started.append(command[-1])
        return real_run(command, **kwargs)

    monkeypatch.setattr(upload_import.subprocess, "run", run)
    return started


def _upload(client, content: bytes, configuration):
    return client.post(
        "/pools/robust/import/",
        {"kind": "run", "file": SimpleUploadedFile("big.trec", content), "configuration": configuration.pk},
    )


@pytest.mark.slow
def test_a_large_run_is_checked_and_imported_by_a_child_process(in_a_child, client, engineer, configuration):
    client.force_login(engineer)
    answer = _upload(client, b"q1 Q0 d3 1 2.5 t\nq1 Q0 d1 2 1.5 t\nq2 Q0 d2 1 9 t\n", configuration)
    assert answer.status_code == 302
    upload = Upload.objects.get()
    assert (upload.size, upload.lines) == (49, 3)
    preview = client.get(answer["Location"])
    assert "A new run of bm25 with 2 ranked queries." in preview.content.decode()
    assert [row["text"] for row in preview.context["rows"]][0] == "q1 Q0 d3 1 2.5 t"
    assert not Run.objects.exists()  # the check was a dry run
    confirmed = client.post(answer["Location"])
    assert confirmed.status_code == 302
    run = Run.objects.get()
    assert (run.submitted_by, run.source, run.filename) == (engineer, "upload", "big.trec")
    assert services.ranking_external_ids(run) == {"q1": ["d3", "d1"], "q2": ["d2"]}
    assert not Upload.objects.exists() and not UploadPart.objects.exists()
    assert in_a_child == ["import_upload", "import_upload"]  # the check and the import


@pytest.mark.slow
def test_a_large_refused_run_shows_its_problems_from_the_child(in_a_child, client, engineer, configuration):
    client.force_login(engineer)
    preview = _upload(client, b"q1 Q0 d3 1 2.5 t\nq1 Q0 d3 x 1.5 t\n", configuration)
    assert preview.status_code == 200
    assert [(p.line, p.field) for p in preview.context["problems"]] == [(2, "rank")]
    assert preview.context["rows"][1]["text"] == "q1 Q0 d3 x 1.5 t"
    assert "Upload another file" in preview.content.decode()
    assert not Upload.objects.exists() and not Run.objects.exists()
    assert in_a_child == ["import_upload"]
