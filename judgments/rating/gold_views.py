"""The gold pairs page (admins): the pool's gold pairs with their known grades, and a form to mark more
(lines `qid docid grade` or TREC qrels; all or nothing, judgments.gold) or to clear them."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from judgments import access, gold
from judgments.models import Pair


@access.require(access.is_admin)
@require_http_methods(["GET", "POST"])
def gold_pairs(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    problems, text, status = [], "", 200
    if request.method == "POST":
        text = request.POST.get("lines", "")
        clearing = request.POST.get("action") == "clear"
        try:
            items = gold.parse_gold_lines(text.splitlines())
            if clearing:
                n = gold.clear_gold(found, [(q, d) for q, d, _ in items])
                messages.success(request, f"{n} pair(s) are no longer gold.")
            else:
                n = gold.mark_gold(found, items, request.user)
                messages.success(request, f"Marked {n} pair(s) gold; scores follow.")
            return redirect("rating:gold", found.name)
        except gold.GoldError as exc:
            problems, status = exc.problems, 400
    rows = (
        Pair.objects.in_pool(found)
        .filter(gold_grade__isnull=False)
        .select_related("query", "document")
        .order_by("query__external_id", "document__external_id")
    )
    return render(
        request,
        "rating/gold.html",
        {"pool": found, "rows": rows[:500], "n_gold": rows.count(), "problems": problems, "text": text},
        status=status,
    )
