"""The campaign's queries page tags and untags queries in bulk: by id or text, one a line; a line naming no
query or a bad tag is refused with one line, and nothing is changed."""

import pytest

from judgments.campaign.tags import TaggingError, tag_queries
from judgments.models import Query
from tests.conftest import login


def tags(pool):
    return dict(Query.objects.filter(pool=pool).values_list("external_id", "tags"))


def test_tag_by_id_or_text_then_untag(pool):
    result = tag_queries(pool, "q1\n\n  QUERY   q2 \n", "head, category:shoes")
    assert (result.matched, result.changed) == (2, 2)
    assert tags(pool) == {"q1": ["category:shoes", "head"], "q2": ["category:shoes", "head"]}
    assert tag_queries(pool, "q1\nq2", "head").changed == 0  # already there
    result = tag_queries(pool, "q2", "head", remove=True)
    assert result.message() == "Tag head removed from 1 query (1 changed)."
    assert tags(pool) == {"q1": ["category:shoes", "head"], "q2": ["category:shoes"]}


@pytest.mark.parametrize(
    ("lines", "tag_text", "words"),
    [
        ("q1\nnope", "head", "queries: line 2: no query of robust has the id or text 'nope'"),
        ("q1", "head,,tail", "tags: a tag is empty"),
        ("q1", "", "tags: give at least one tag"),
        ("q1", "x" * 65, "at most 64"),
        ("", "head", "queries: paste at least one query id or text"),
    ],
)
def test_bad_input_changes_nothing(pool, lines, tag_text, words):
    with pytest.raises(TaggingError, match=words):
        tag_queries(pool, lines, tag_text)
    assert tags(pool) == {"q1": [], "q2": []}


def test_the_page_tags_lists_and_refuses(client, pool, site_admin):
    login(client, site_admin)
    page = f"/campaign/pools/{pool.name}/queries/"
    response = client.post(page, {"queries": "q1\nquery q2", "tags": "tail", "remove": "0"})
    assert response.status_code == 302 and response["Location"].endswith("?tag=tail#tagging")
    assert tags(pool) == {"q1": ["tail"], "q2": ["tail"]}
    html = client.get(page, {"tag": "tail"}).content.decode()
    assert 'data-tag="tail">tail <span class="small">2</span>' in html
    bad = client.post(page, {"queries": "q1\nmissing", "tags": "head", "remove": "0"})
    assert bad.status_code == 400
    text = bad.content.decode()
    assert (
        "queries: line 2: no query of robust has the id or text &#x27;missing&#x27;. Nothing was changed."
        in text
    )
    assert "q1\nmissing</textarea>" in text  # the form comes back as typed
    assert tags(pool) == {"q1": ["tail"], "q2": ["tail"]}
    client.post(page, {"queries": "q1", "tags": "tail", "remove": "1"})
    assert tags(pool) == {"q1": [], "q2": ["tail"]}


def test_stored_order_is_pythons_and_the_limit_holds(pool):
    """Tags written by SQL are sorted as Python sorts them (an import of the same tags finds them unchanged),
    and a query cannot go over 50 tags."""
    import io

    from judgments.exchange.imports import import_queries

    tag_queries(pool, "q1", "alpha")
    tag_queries(pool, "q1", "Zeta beta")
    assert tags(pool)["q1"] == sorted(["alpha", "Zeta", "beta"]) == ["Zeta", "alpha", "beta"]
    summary = import_queries(pool, io.StringIO("q1\tquery q1\tbeta,alpha,Zeta\n"), name="same.tsv")
    assert summary.unchanged == 1
    tag_queries(pool, "q2", " ".join(f"t{i}" for i in range(50)))
    with pytest.raises(TaggingError, match="query q2 would have 51 tags; at most 50"):
        tag_queries(pool, "q1\nq2", "one-more")
    assert "one-more" not in tags(pool)["q1"]
