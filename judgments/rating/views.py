"""Rating pages: the grading page and "my judgments" for raters; agreement and disagreements for admins (the
queue page: queue_views).

Raters see queries, documents and their own judgments only: never a configuration, run, rank, score or
another rater's grade. Every page is a plain server-rendered form; `static/js/grade.js` adds the keyboard and
swaps the pair in place. A request carrying the `X-Rating-Fragment` header gets just the `_grading.html`
fragment (and the URL to show in `X-Rating-Url`) instead of a redirect and a full page.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judgments import access, raters, services, snapshots
from judgments.models import DISTRACTOR, Judgment, Pair, Pool, Query
from judgments.paging import UncountedPage

from . import adjudication, grading, queue
from .display import (
    extra_fields,
    grade_scale,
    highlight,
    highlight_paragraphs,
    query_terms,
    render_markdown,
    safe_url,
)
from .forms import (
    FinalGradeForm,
    GradeForm,
    MyJudgmentsFilter,
)

FRAGMENT_HEADER = "X-Rating-Fragment"
URL_HEADER = "X-Rating-Url"
MAX_SKIPPED = 500


def _is_fragment(request: HttpRequest) -> bool:
    return request.headers.get(FRAGMENT_HEADER) == "1"


# --- Access ------------------------------------------------------------------------------------------


def _rating_pool(request: HttpRequest, pool_name: str) -> Pool:
    """A pool the user grades in (member and rater), or 404."""
    return access.get_pool_or_404(request.user, access.rating_pools_for, name=pool_name)


def _skip_key(pool: Pool) -> str:
    return f"rating.skipped.{pool.pk}"


def _skipped(request: HttpRequest, pool: Pool) -> list[int]:
    return list(request.session.get(_skip_key(pool), []))


def _add_skipped(request: HttpRequest, pool: Pool, pair_id: int) -> None:
    skipped = [s for s in _skipped(request, pool) if s != pair_id] + [pair_id]
    request.session[_skip_key(pool)] = skipped[-MAX_SKIPPED:]


# --- Grading ---------------------------------------------------------------------------------------


def _previous_pair_id(rater, pool: Pool, before: Judgment | None) -> int | None:
    """The pair of the rater's judgment made just before `before` (or their latest one)."""
    mine = Judgment.objects.filter(rater=rater, pair__pool=pool)
    if before is not None:
        mine = mine.filter(pk__lt=before.pk)
    return mine.order_by("-pk").values_list("pair_id", flat=True).first()


_LOOK_UP = object()  # _grading_context: find it in the database


def _grading_context(
    request,
    pool: Pool,
    pair: Pair | None,
    *,
    form=None,
    notice: str = "",
    judgment=_LOOK_UP,
    previous=_LOOK_UP,
    served: grading.Served | None = None,
) -> dict:
    """`judgment`: the rater's judgment of `pair` and `previous`: the pair of their judgment before it,
    when the caller knows them (right after a grade), else looked up. `served`: what the queue served
    (its counts and the rater's pause), when the pair comes from it."""
    rater = request.user
    if judgment is _LOOK_UP:
        judgment = Judgment.objects.filter(pair=pair, rater=rater).first() if pair else None
    if previous is _LOOK_UP:
        previous = _previous_pair_id(rater, pool, judgment)
    mine, overall = grading.progress(rater, pool, served.counts if served else None)
    context = {
        "pool": pool,
        "pair": pair,
        "judgment": judgment,
        "form": form,
        "notice": notice,
        "scale": grade_scale(pool),
        "mine": mine,
        "overall": overall,
        "skipped": len(_skipped(request, pool)),
        "previous_url": reverse("rating:grade-pair", args=[pool.name, previous]) if previous else "",
        "queue_url": reverse("rating:grade", args=[pool.name]),
    }
    if pair is None:  # why there is nothing: an admin's pause says so rather than "nothing to grade"
        context["paused"] = served.paused if served else raters.is_paused(pool, rater)
    else:
        terms = query_terms(pair.query.text)
        document = pair.document
        context.update(
            {
                "action_url": reverse("rating:grade-pair", args=[pool.name, pair.pk]),
                "title_html": highlight(document.title, terms),
                "body_html": highlight_paragraphs(document.body, terms),
                "doc_url": safe_url(document.url),
                "extra": extra_fields(document.extra),
                "note_value": form.data.get("note", "")
                if form is not None
                else (judgment.note if judgment else ""),
            }
        )
    return context


def _render_grading(
    request, pool: Pool, pair: Pair | None, *, url: str, status: int = 200, **kwargs
) -> HttpResponse:
    context = _grading_context(request, pool, pair, **kwargs)
    if _is_fragment(request):
        response = render(request, "rating/_grading.html", context, status=status)
        response[URL_HEADER] = url
    else:
        context["guidelines_html"] = render_markdown(pool.guidelines)
        # Open before the rater's first answer in this pool: read them once before grading.
        context["guidelines_open"] = context["mine"]["done"] == 0
        response = render(request, "rating/grade.html", context, status=status)
    response["Cache-Control"] = "no-store"
    return response


def _next(
    request, pool: Pool, *, notice: str = "", level=messages.SUCCESS, just_graded: int | None = None
) -> HttpResponse:
    """After an answer: the next pair in place (fragment requests) or a redirect to it (plain forms).
    `just_graded`: the pair the rater's newest judgment is of (their "previous" pair), when known."""
    url = reverse("rating:grade", args=[pool.name])
    if _is_fragment(request):
        served = grading.serve(request.user, pool, skip=_skipped(request, pool))
        known = {"previous": just_graded} if just_graded is not None else {}
        # A pair served by the queue is one the rater has not judged.
        return _render_grading(
            request, pool, served.pair, url=url, notice=notice, judgment=None, served=served, **known
        )
    if notice:
        messages.add_message(request, level, notice)
    return redirect(url)


@access.require(access.is_rater)
@require_GET
def grade_next(request: HttpRequest, pool_name: str) -> HttpResponse:
    """The pair the rater should grade next (held for them for a few minutes), or "all done"."""
    found = _rating_pool(request, pool_name)
    served = grading.serve(request.user, found, skip=_skipped(request, found))
    return _render_grading(request, found, served.pair, url=request.path, judgment=None, served=served)


@access.require(access.is_rater)
@require_POST
def review_skipped(request: HttpRequest, pool_name: str) -> HttpResponse:
    """Serve the pairs the rater skipped again."""
    found = _rating_pool(request, pool_name)
    request.session.pop(_skip_key(found), None)
    return redirect("rating:grade", found.name)


def _refusal(form: GradeForm, pool: Pool) -> str:
    """What was wrong with a grading post, for the page: nothing was saved."""
    if "grade" in form.errors:
        raw = form.data.get("grade", "")
        text = f"Nothing was saved: “{raw[:20]}” is not a grade. Choose a grade {pool.grade_range}."
        if raw.strip() == str(DISTRACTOR) and (refused := pool.grade_problem(DISTRACTOR)):
            text += " " + refused
        return text
    if "action" in form.errors:
        return "Nothing was saved: that answer could not be read."
    return "Nothing was saved: " + " ".join(e for errors in form.errors.values() for e in errors)


@access.require(access.is_rater)
@require_http_methods(["GET", "POST"])
def grade_pair(request: HttpRequest, pool_name: str, pair_id: int) -> HttpResponse:
    """GET: a pair the rater judged (to change it) or holds. POST: grade, skip or can't judge it."""
    found = _rating_pool(request, pool_name)
    pairs = Pair.objects.select_related("query", "document")
    if request.method == "GET":
        pair = get_object_or_404(pairs, pk=pair_id, pool=found)
        if not grading.may_view(pair, request.user):
            raise Http404("No such pair")
        return _render_grading(request, found, pair, url=request.path)

    form = GradeForm(request.POST, pool=found)
    if not form.is_valid():
        pair = get_object_or_404(pairs, pk=pair_id, pool=found)
        if grading.may_view(pair, request.user):
            return _render_grading(
                request, found, pair, url=request.path, form=form, status=400, notice=_refusal(form, found)
            )
        return _next(
            request,
            found,
            notice="That answer could not be read; here is your next pair.",
            level=messages.ERROR,
        )
    data = form.cleaned_data
    if data["action"] == GradeForm.SKIP:
        pair = get_object_or_404(pairs, pk=pair_id, pool=found)
        # Skipping a pair one has judged already just leaves it as it is.
        if not Judgment.objects.filter(pair=pair, rater=request.user).exists():
            _add_skipped(request, found, pair.pk)
            grading.release_hold(pair, request.user)
            return _next(
                request, found, notice="Skipped: it is offered again once the other pairs are graded."
            )
        return _next(request, found, notice="Kept as it is.")
    try:
        # The pair is read once, locked, by save_grade (a grade is the common post: no read before it).
        judgment = grading.save_grade(
            pair_id,
            request.user,
            pool=found,
            grade=data["grade"],
            cant_judge=data["action"] == GradeForm.CANT,
            reason=data["reason"],
            note=data["note"],
        )
    except Pair.DoesNotExist:
        raise Http404("No such pair") from None
    except (queue.QueueError, services.JudgmentError) as error:
        return _next(request, found, notice=str(error), level=messages.ERROR)
    pair = judgment.pair
    judged = not judgment.created  # had judged it before: this changed it
    if data["action"] == GradeForm.CANT:
        saved = "Saved as can't judge."
    else:
        saved = f"Saved {data['grade']} ({found.grade_label(data['grade'])})."
    return_to = access.safe_next(request, request.POST.get("return_to"))
    if return_to:
        messages.success(request, f"{pair.query.external_id} / {pair.document.external_id}: {saved}")
        return redirect(return_to)
    return _next(
        request,
        found,
        notice=f"{'Changed. ' if judged else ''}{saved} Back (u) changes it.",
        just_graded=None if judged else pair.pk,  # a new judgment is the rater's newest
    )


@access.require(access.is_rater)
@require_GET
def my_judgments(request: HttpRequest, pool_name: str) -> HttpResponse:
    """The rater's own judgments in the pool, newest first, filterable by query and grade; each changeable."""
    found = _rating_pool(request, pool_name)
    mine = (
        Judgment.objects.filter(pair__pool=found, rater=request.user)
        .select_related("pair__query", "pair__document")
        .order_by("-updated_at", "-pk")
    )
    # A rater may hold a million judgments in a pool: the query is typed (its id), not picked from a list of
    # every query they judged, and the pages are not counted (the total comes from the stored tallies).
    filters = MyJudgmentsFilter(
        request.GET or None, queries=Query.objects.filter(pool=found), grades=found.grades
    )
    progress = grading.rater_progress(request.user, found)
    total = progress["done"]
    if filters.is_valid():
        if filters.cleaned_data["query"]:
            mine = mine.filter(pair__query=filters.cleaned_data["query"])
            total = None
        grade = filters.cleaned_data["grade"]
        if grade == MyJudgmentsFilter.CANT:
            mine = mine.filter(cant_judge=True)
            total = None if total is None else progress["cant"]
        elif grade != "":
            mine = mine.filter(grade=int(grade), cant_judge=False)
            total = None
    page = UncountedPage(mine, request.GET.get("page"), per_page=50, total=total)
    query_string = request.GET.copy()
    query_string.pop("page", None)
    return render(
        request,
        "rating/my_judgments.html",
        {
            "pool": found,
            "page": page,
            "filters": filters,
            "scale": grade_scale(found),
            "query_string": query_string.urlencode(),
            "mine": progress,
        },
    )


# --- Admin: agreement and adjudication ---------------------------------------------------------------


@access.require(access.is_admin)
@require_GET
def agreement(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    shown = snapshots.read(found, "agreement")[""]  # stored: computed by a task when the pool changed
    return render(
        request,
        "rating/agreement.html",
        {
            "pool": found,
            "agreement": adjudication.agreement_from(shown.value) if shown.value is not None else None,
            "snapshot": shown,
            "judges": found.judges.select_related("user"),
        },
    )


@access.require(access.is_admin)
@require_GET
def disagreements(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    # The order is stored (a snapshot computed by a task when the pool changed) and read a page at a time.
    shown = snapshots.read(found, "disagreements")[""]
    counts = shown.value or {"total": 0, "unsettled": 0}
    page = Paginator(adjudication.StoredDisagreements(found, counts["total"]), 25).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "rating/disagreements.html",
        {
            "pool": found,
            "page": page,
            "snapshot": shown,
            "pairs": adjudication.disagreements(found, pair_ids=page.object_list),
            "total": counts["total"],
            "unsettled": counts["unsettled"],
            "scale": grade_scale(found),
            "spread": adjudication.DISAGREEMENT_SPREAD,
        },
    )


@access.require(access.is_admin)
@require_POST
def final_grade(request: HttpRequest, pool_name: str, pair_id: int) -> HttpResponse:
    """Set (or clear) an admin's final grade; scoring uses it instead of the raters' combined grade."""
    found = access.admin_pool_or_404(request, pool_name)
    pair = get_object_or_404(Pair.objects.select_related("query", "document"), pk=pair_id, pool=found)
    form = FinalGradeForm(request.POST, pool=found)
    if not form.is_valid():
        messages.error(request, form.refusal())
    else:
        grade = form.cleaned_data["grade"]
        try:
            services.set_final_grade(pair, grade, request.user)
        except services.JudgmentError as error:
            messages.error(request, str(error))
        else:
            label = f"{grade} ({found.grade_label(grade)})" if grade is not None else "cleared"
            messages.success(request, f"Final grade of {pair}: {label}.")
    page = request.POST.get("page", "")
    query = f"?page={int(page)}" if page.isdigit() else ""
    return redirect(f"{reverse('rating:disagreements', args=[found.name])}{query}#pair-{pair.pk}")
