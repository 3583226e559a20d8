"""The pool's queries page (admins): every query with its fields and tags, a form to edit one query's
fields (`name = value` per line), the values endpoint templates use as {{query.fields.NAME}}, and a form
that tags or untags many queries at once (`tags.tag_queries`); ?tag= lists the queries with a tag."""

from __future__ import annotations

import json

from django.contrib import messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from judgments import access
from judgments.models import Query
from judgments.query_fields import fields_problem

from .tags import TaggingError, tag_queries

LISTED = 200


def parse_fields(text: str) -> dict:
    """`name = value` lines as fields: a value that reads as a JSON number or true/false is one, anything
    else is a string. ValueError naming the line."""
    fields: dict = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name:
            raise ValueError(f"line {number}: expected name = value, not {raw.strip()!r}")
        if name in fields:
            raise ValueError(f"line {number}: field {name} is given twice")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        fields[name] = parsed if isinstance(parsed, (int, float, bool)) else value
        problem = fields_problem({name: fields[name]})
        if problem:
            raise ValueError(f"line {number}: {problem}")
    problem = fields_problem(fields)
    if problem:
        raise ValueError(problem)
    return fields


def format_fields(fields: dict) -> str:
    return "\n".join(
        f"{name} = {value if isinstance(value, str) else json.dumps(value)}" for name, value in fields.items()
    )


@access.require(access.is_admin)
def queries_page(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    errors: dict[int, str] = {}
    submitted: dict[int, str] = {}
    tagging = {"queries": "", "tags": "", "error": None}
    if request.method == "POST" and "tags" in request.POST:  # the bulk tagging form
        tagging.update(queries=request.POST.get("queries", ""), tags=request.POST.get("tags", ""))
        try:
            result = tag_queries(
                found, tagging["queries"], tagging["tags"], remove=request.POST.get("remove") == "1"
            )
        except TaggingError as exc:
            tagging["error"] = f"{exc}. Nothing was changed."
        else:
            messages.success(request, result.message())
            return redirect(f"{request.path}?tag={result.tags[0]}#tagging")
    elif request.method == "POST":
        query = get_object_or_404(Query, pool=found, pk=request.POST.get("query") or 0)
        text = request.POST.get("fields", "")
        try:
            query.fields = parse_fields(text)
        except ValueError as exc:
            errors[query.pk], submitted[query.pk] = str(exc), text
        else:
            query.save(update_fields=["fields"])
            messages.success(request, f"Fields of query {query.external_id} saved.")
            return redirect(f"{request.path}?q={request.GET.get('q', '')}#query-{query.pk}")
    search = request.GET.get("q", "").strip()
    rows = Query.objects.filter(pool=found).order_by("external_id")
    if search:
        rows = rows.filter(Q(external_id__icontains=search) | Q(text__icontains=search))
    tag = request.GET.get("tag", "").strip()
    if tag:
        rows = rows.filter(tags__contains=[tag])
    total = rows.count()
    shown = [
        {
            "query": q,
            "text": submitted.get(q.pk, format_fields(q.fields)),
            "error": errors.get(q.pk),
        }
        for q in rows[:LISTED]
    ]
    names = sorted(
        {
            name
            for fields in Query.objects.filter(pool=found).values_list("fields", flat=True)
            for name in fields
        }
    )
    return render(
        request,
        "campaign/queries.html",
        {
            "pool": found,
            "rows": shown,
            "total": total,
            "search": search,
            "names": names,
            "active": "queries",
            "tag": tag,
            "pool_tags": Query.objects.filter(pool=found).tag_counts(),
            "tagging": tagging,
        },
        status=400 if errors or tagging["error"] else 200,
    )
