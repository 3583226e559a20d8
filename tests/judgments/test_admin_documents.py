"""The admin keeps a document that a stored run ranks: rankings hold document keys in an array (no foreign
key), and the run's exports would fail without the document."""

from django.urls import reverse

from judgments.models import Document


def test_a_ranked_document_cannot_be_deleted_one_unranked_can(client, site_admin, run):
    client.force_login(site_admin)
    ranked = Document.objects.get(pool=run.configuration.pool, external_id="d1")
    unranked = Document.objects.create(pool=run.configuration.pool, external_id="d-unranked")
    url = reverse("admin:judgments_document_delete", args=[ranked.pk])

    page = client.get(url)
    assert page.status_code == 200
    assert "would require deleting the following protected related objects" in page.text
    assert f"Run {run.pk} of {run.configuration.name}, which ranks it" in page.text
    client.post(url, {"post": "yes"})
    assert Document.objects.filter(pk=ranked.pk).exists()

    client.post(reverse("admin:judgments_document_delete", args=[unranked.pk]), {"post": "yes"})
    assert not Document.objects.filter(pk=unranked.pk).exists()


def test_the_delete_action_refuses_a_selection_holding_a_ranked_document(client, site_admin, run):
    client.force_login(site_admin)
    pool = run.configuration.pool
    ranked = Document.objects.get(pool=pool, external_id="d3")
    unranked = Document.objects.create(pool=pool, external_id="d-unranked")
    changelist = reverse("admin:judgments_document_changelist")

    answer = client.post(
        changelist, {"action": "delete_selected", "_selected_action": [ranked.pk, unranked.pk], "post": "yes"}
    )
    assert "protected related objects" in answer.text
    assert Document.objects.filter(pk__in=[ranked.pk, unranked.pk]).count() == 2


def test_a_document_of_another_pool_with_the_same_key_space_is_not_protected(client, site_admin, run, db):
    """Only runs of the document's own pool count (the overlap is on keys, which are unique anyway)."""
    from judgments.models import Pool

    other = Pool.objects.create(name="elsewhere")
    lone = Document.objects.create(pool=other, external_id="d1")
    client.force_login(site_admin)
    client.post(reverse("admin:judgments_document_delete", args=[lone.pk]), {"post": "yes"})
    assert not Document.objects.filter(pk=lone.pk).exists()
