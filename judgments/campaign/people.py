"""A pool's people (admins): add existing accounts, create rater accounts with a one-time set-password
link, make a new link, remove from the pool, deactivate; and the set-password page the link opens.

A new link is shown once, in the answer to the POST that made it: it is not stored, logged or put in a
message. The set-password page follows Django's own reset view: the token moves from the URL into the
session at once, so the page the person types their password into has no token in its address.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import SetPasswordForm
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from judgments import access, raters, tallies
from judgments.models import Judgment, Pool, RaterStatus

from . import accounts
from .forms import AddMemberForm, NewRaterForm
from .views import admin_only

SESSION_TOKEN = "_campaign_set_password_token"
SET_TOKEN = "set-password"  # stands in for the token in the URL once it is in the session


def _people_page(request: HttpRequest, pool: Pool, status: int = 200, **context) -> HttpResponse:
    # Each member's judgments in this pool only, through the pool's pairs (a join would read the member's
    # judgments in every pool, then filter).
    mine = Judgment.objects.filter(rater=OuterRef("pk"), pair__pool=pool)
    members = (
        pool.members.annotate(last_graded=Subquery(mine.order_by("-updated_at").values("updated_at")[:1]))
        .prefetch_related("groups")
        .order_by("username")
    )
    counts = tallies.per_rater(pool)  # stored: counting each member's judgments took 2 s on a big pool
    for member in members:
        member.n_judgments = counts[member.pk].done if member.pk in counts else 0
    statuses = {s.rater_id: s for s in RaterStatus.objects.filter(pool=pool)}
    rows = [
        {
            "status": statuses.get(member.pk),
            "user": member,
            "roles": accounts.roles(member),
            "may_link": accounts.may_get_link(request.user, member),
            "is_me": member.pk == request.user.pk,
        }
        for member in members
    ]
    return render(
        request,
        "campaign/people.html",
        {
            "pool": pool,
            "active": "people",
            "rows": rows,
            "n_raters": sum(access.RATER in r["roles"] for r in rows),
            "add_form": context.pop("add_form", None) or AddMemberForm(),
            "new_form": context.pop("new_form", None) or NewRaterForm(),
            "link_days": accounts.link_days(),
            **context,
        },
        status=status,
    )


@admin_only
def people(request: HttpRequest, pool_name: str) -> HttpResponse:
    return _people_page(request, access.admin_pool_or_404(request, pool_name))


@admin_only
@require_POST
def member_add(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = AddMemberForm(request.POST)
    if not form.is_valid():
        return _people_page(request, found, status=400, add_form=form)
    user, role = form.cleaned_data["user"], form.cleaned_data["role"]
    found.members.add(user)
    if role != AddMemberForm.KEEP:
        accounts.give_role(user, role)
    note = "" if user.is_active else " The account is deactivated: reactivate it below to let them log in."
    messages.success(request, f"{user.get_username()} is a member of {found.name}.{note}")
    return redirect("campaign:people", found.name)


@admin_only
@require_POST
def rater_new(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    form = NewRaterForm(request.POST)
    if not form.is_valid():
        return _people_page(request, found, status=400, new_form=form)
    user = accounts.create_rater(found, form.cleaned_data["username"], form.cleaned_data["email"])
    return _people_page(
        request,
        found,
        new_link={"user": user, "url": request.build_absolute_uri(accounts.set_password_path(user))},
    )


def _member(pool: Pool, user_id: int):
    return get_object_or_404(pool.members, pk=user_id)


@admin_only
@require_POST
def member_link(request: HttpRequest, pool_name: str, user_id: int) -> HttpResponse:
    """A new one-time link for a member who has not set a password yet, or forgot it."""
    found = access.admin_pool_or_404(request, pool_name)
    user = _member(found, user_id)
    if not accounts.may_get_link(request.user, user):
        messages.error(request, "Admins set their own passwords; links are for raters and engineers.")
        return redirect("campaign:people", found.name)
    if not user.is_active:
        messages.error(request, f"{user.get_username()} is deactivated: reactivate the account first.")
        return redirect("campaign:people", found.name)
    return _people_page(
        request,
        found,
        new_link={"user": user, "url": request.build_absolute_uri(accounts.set_password_path(user))},
    )


@admin_only
@require_POST
def member_remove(request: HttpRequest, pool_name: str, user_id: int) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    user = _member(found, user_id)
    found.members.remove(user)
    kept = Judgment.objects.filter(pair__pool=found, rater=user).count()
    messages.success(
        request,
        f"{user.get_username()} is no longer a member of {found.name}"
        + (f"; their {kept} judgment{'s' if kept != 1 else ''} stay in the pool." if kept else "."),
    )
    return redirect("campaign:people", found.name)


@admin_only
@require_POST
def member_active(request: HttpRequest, pool_name: str, user_id: int) -> HttpResponse:
    """Deactivate (no login anywhere, judgments kept) or reactivate a member's account."""
    found = access.admin_pool_or_404(request, pool_name)
    user = _member(found, user_id)
    active = request.POST.get("active") == "1"
    if user.pk == request.user.pk or (user.is_superuser and not request.user.is_superuser):
        messages.error(request, "You cannot deactivate your own account or a superuser's.")
        return redirect("campaign:people", found.name)
    user.is_active = active
    user.save(update_fields=["is_active"])
    if active:
        messages.success(request, f"{user.get_username()} can log in again.")
    else:
        messages.success(
            request, f"{user.get_username()} is deactivated: they cannot log in; their judgments stay."
        )
    return redirect("campaign:people", found.name)


@admin_only
@require_POST
def member_standing(request: HttpRequest, pool_name: str, user_id: int) -> HttpResponse:
    """Pause or resume a rater's grading in the pool, or leave their grades out of (or back in) the
    combined grade (judgments.raters: recorded in its history; scores follow)."""
    found = access.admin_pool_or_404(request, pool_name)
    user = _member(found, user_id)
    what, value = request.POST.get("what"), request.POST.get("value") == "1"
    name = user.get_username()
    if what == "paused":
        raters.set_paused(found, user, value, request.user)
        messages.success(
            request, f"{name} is paused: no pair is served to them." if value else f"{name} may grade again."
        )
    elif what == "excluded":
        n = raters.set_excluded(found, user, value, request.user)
        messages.success(
            request,
            f"{name}'s {n} judgment(s) are left out of the combined grade; scores follow."
            if value
            else f"{name}'s {n} judgment(s) count again; scores follow.",
        )
    else:
        messages.error(request, "Say what to change: paused or excluded.")
    return redirect("campaign:people", found.name)


# --- The set-password page the link opens ----------------------------------------------------------------


@login_not_required
@never_cache
def set_password(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    if token != SET_TOKEN:
        # Move the token into the session and out of the address bar (and of any Referer header).
        request.session[SESSION_TOKEN] = token
        return redirect("campaign:set-password", uidb64, SET_TOKEN)
    user = accounts.user_for_link(uidb64, request.session.get(SESSION_TOKEN, ""))
    if user is None:
        return render(request, "campaign/set_password.html", {"invalid": True, "days": accounts.link_days()})
    form = SetPasswordForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()  # the token stops working: it hashes the password
        del request.session[SESSION_TOKEN]
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}: your password is set.")
        return redirect(_landing(user))
    return render(request, "campaign/set_password.html", {"form": form, "account": user})


def _landing(user) -> str:
    """Straight to grading when the new rater has exactly one pool, else the list of pools."""
    pools = list(access.rating_pools_for(user)[:2])
    if access.is_rater(user) and len(pools) == 1:
        return reverse("rating:grade", args=[pools[0].name])
    return reverse("home")
