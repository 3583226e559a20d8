"""A pool's queries and documents, each with its external id (the id files and runs use)."""

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.exceptions import ValidationError
from django.db import connection, models
from django.db.models import Q

from judgments.query_tags import MAX_LENGTH as TAG_MAX_LENGTH
from judgments.query_tags import MAX_TAGS, tags_problem

from .pools import EXTERNAL_ID_MAX, NO_WHITESPACE_SQL, Pool, no_whitespace, text_limit, text_limit_constraints

# Foreign keys with db_index=False are served by a composite index that starts with them (its name in the
# comment): a second index would only cost every bulk insert (migration 0012).


def valid_tags(value) -> None:
    """Field validator of Query.tags (the Django admin's form, full_clean): the rule of judgments.query_tags."""
    if problem := tags_problem(value):
        raise ValidationError(problem)


class QueryQuerySet(models.QuerySet):
    def tag_counts(self) -> list[tuple[str, int]]:
        """Every tag these queries carry, with its number of queries, by tag (one statement)."""
        sql, params = self.order_by().values("tags").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(
                f'SELECT tag, count(*) FROM ({sql}) q, unnest(q.tags) AS tag GROUP BY tag ORDER BY tag COLLATE "C"',
                params,
            )
            return [(tag, n) for tag, n in cursor.fetchall()]


class Query(models.Model):
    pool = models.ForeignKey(
        Pool, models.CASCADE, related_name="queries", db_index=False
    )  # query_id_unique_in_pool
    external_id = models.CharField("query id", max_length=EXTERNAL_ID_MAX, validators=[no_whitespace])
    text = models.TextField(blank=True, validators=text_limit("query", "text"))
    information_need = models.TextField(
        blank=True,
        help_text="What the searcher wants; raters see it.",
        validators=text_limit("query", "information_need"),
    )
    fields = models.JSONField(
        default=dict,
        db_default={},  # rows written by SQL (bulk imports, COPY) get {} too
        blank=True,
        help_text='{"NAME": value}: per-query values endpoint templates use as {{query.fields.NAME}} '
        "(a filter, a locale, a category); strings, numbers or true/false",
    )
    # Segments (judgments.query_tags: the rule): sorted, each once. Score pages, exports and the API filter
    # on them with `tags @> ARRAY[...]` (the GIN index).
    tags = ArrayField(
        models.CharField(max_length=TAG_MAX_LENGTH),
        default=list,
        db_default=[],  # rows written by SQL (bulk imports, COPY) get {} too
        blank=True,
        validators=[valid_tags],
        help_text="Segments this query belongs to (head, tail, category:shoes): no whitespace or comma, "
        f"at most {TAG_MAX_LENGTH} characters each, at most {MAX_TAGS}",
    )

    objects = QueryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["pool", "external_id"]
        indexes = [GinIndex(fields=["tags"], name="query_tags_gin")]
        constraints = [
            models.CheckConstraint(condition=Q(tags__len__lte=MAX_TAGS), name="query_tags_at_most_50"),
            models.UniqueConstraint(fields=["pool", "external_id"], name="query_id_unique_in_pool"),
            models.CheckConstraint(
                condition=Q(external_id__regex=NO_WHITESPACE_SQL), name="query_id_no_whitespace"
            ),
            *text_limit_constraints("query"),
        ]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.text[:60]}"


class DocumentQuerySet(models.QuerySet):
    def with_content(self):
        return self.exclude(title="", body="")

    def without_content(self):
        return self.filter(title="", body="")


class Document(models.Model):
    pool = models.ForeignKey(
        Pool, models.CASCADE, related_name="documents", db_index=False
    )  # document_id_unique_in_pool
    external_id = models.CharField("document id", max_length=EXTERNAL_ID_MAX, validators=[no_whitespace])
    title = models.TextField(blank=True, validators=text_limit("document", "title"))
    body = models.TextField(blank=True, validators=text_limit("document", "body"))
    url = models.URLField(max_length=2000, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    # The configuration whose run brought this id into the pool, while nothing else has: its rankings
    # may be private to its team (access.documents_for). Cleared when an admin gives the document its
    # content (an import, the API); NULL for documents imported as such, or named by qrels/judgments.
    introduced_by = models.ForeignKey(
        "SearchConfiguration", models.SET_NULL, null=True, blank=True, related_name="+", db_index=False
    )

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "external_id"], name="document_id_unique_in_pool"),
            models.CheckConstraint(
                condition=Q(external_id__regex=NO_WHITESPACE_SQL), name="document_id_no_whitespace"
            ),
            # Rankings' no-duplicate check sorts keys as int4 (migration 0003).
            models.CheckConstraint(condition=Q(id__lt=2**31), name="document_key_fits_int4"),
            *text_limit_constraints("document"),
        ]
        indexes = [
            # The few documents still waiting for content. Scans of a whole queue leave their pairs out
            # with an anti-join on this small index (judgments.rating.grading) instead of reading every
            # document's title and body, which is most of the table (and TOAST for long bodies).
            models.Index(
                fields=["pool", "id"], condition=Q(title="", body=""), name="document_without_content"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def has_content(self) -> bool:
        return bool(self.title or self.body)
