"""Campaign pages for admins: pools (create, settings, guidelines preview) and teams (create, engineers,
which team a configuration belongs to). A pool's people are in people.py.

Everything an admin needs to run a campaign without Django admin; every page is admins only (403 for
anyone else), server-rendered, and works without JavaScript (htmx adds the live guidelines preview).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db.models import Count, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from judgments import access
from judgments.counts import count_of
from judgments.markup import render_markdown
from judgments.models import Document, Pair, Pool, Query, SearchConfiguration, Team

from . import accounts
from .forms import MoveConfigurationForm, PoolForm, TeamForm, TeamMemberForm

admin_only = access.require(access.is_admin)
User = get_user_model()


@admin_only
def index(request: HttpRequest) -> HttpResponse:
    """Every pool with what it needs next, and the teams."""
    # One subquery per count: joined, the four relations multiply (queries x documents x raters x pairs).
    pool = OuterRef("pk")
    pools = Pool.objects.annotate(
        n_queries=count_of(Query.objects.filter(pool=pool)),
        n_documents=count_of(Document.objects.filter(pool=pool)),
        n_raters=count_of(User.objects.filter(pools=pool, groups__name=access.RATER)),
        n_queued=count_of(Pair.objects.filter(pool=pool, queued_at__isnull=False)),
    ).order_by("name")
    teams = Team.objects.annotate(
        n_members=count_of(User.objects.filter(teams=OuterRef("pk"))),
        n_configurations=count_of(SearchConfiguration.objects.filter(team=OuterRef("pk"))),
    ).order_by("name")
    return render(request, "campaign/index.html", {"pools": pools, "teams": teams})


@admin_only
def pool_new(request: HttpRequest) -> HttpResponse:
    form = PoolForm(request.POST or None)
    preview = None
    if request.method == "POST" and "preview" in request.POST:
        preview = render_markdown(request.POST.get("guidelines", ""))
    elif request.method == "POST" and form.is_valid():
        pool = form.save()
        pool.members.add(request.user)
        messages.success(request, f"Pool {pool.name} created. Next: add its raters.")
        return redirect("campaign:people", pool.name)
    return render(request, "campaign/pool_form.html", {"form": form, "pool": None, "preview": preview})


@admin_only
def pool_edit(request: HttpRequest, pool_name: str) -> HttpResponse:
    found = access.admin_pool_or_404(request, pool_name)
    before = (found.queue_strategy, found.queue_depth)  # validating the form changes `found`
    form = PoolForm(request.POST or None, instance=found)
    preview = None
    if request.method == "POST" and "preview" in request.POST:
        preview = render_markdown(request.POST.get("guidelines", ""))
    elif request.method == "POST" and form.is_valid():
        saved = form.save()
        note = ""
        if before != (saved.queue_strategy, saved.queue_depth) and saved.pairs.queued().exists():
            note = " Rebuild the queue (Queue page) to order it by the new strategy and depth."
        messages.success(request, f"The settings of {found.name} are saved.{note}")
        return redirect("campaign:pool-edit", found.name)
    if preview is None and request.method == "GET":
        preview = render_markdown(found.guidelines)
    return render(
        request,
        "campaign/pool_form.html",
        {"form": form, "pool": found, "preview": preview, "active": "settings"},
    )


@admin_only
@require_POST
def guidelines_preview(request: HttpRequest) -> HttpResponse:
    """The guidelines as raters will see them (htmx, as the admin types)."""
    return render(
        request,
        "campaign/_guidelines_preview.html",
        {"preview": render_markdown(request.POST.get("guidelines", ""))},
    )


# --- Teams --------------------------------------------------------------------------------------------


@admin_only
def teams(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = form.save()
        messages.success(request, f"Team {team.name} created. Add its engineers.")
        return redirect("campaign:team", team.pk)
    rows = Team.objects.annotate(n_configurations=Count("configurations")).prefetch_related("members")
    return render(request, "campaign/teams.html", {"form": form, "teams": rows})


def _team_page(request: HttpRequest, team: Team, status: int = 200, **forms) -> HttpResponse:
    configurations = (
        SearchConfiguration.objects.filter(team=team).select_related("pool").annotate(n_runs=Count("runs"))
    )
    others = Team.objects.exclude(pk=team.pk)
    return render(
        request,
        "campaign/team_detail.html",
        {
            "team": team,
            "members": [(m, accounts.roles(m)) for m in team.members.order_by("username")],
            "member_form": forms.get("member_form") or TeamMemberForm(),
            "configurations": configurations,
            "move_form": MoveConfigurationForm(),
            "other_teams": others,
        },
        status=status,
    )


@admin_only
def team_detail(request: HttpRequest, team_id: int) -> HttpResponse:
    return _team_page(request, get_object_or_404(Team, pk=team_id))


@admin_only
@require_POST
def team_member_add(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_object_or_404(Team, pk=team_id)
    form = TeamMemberForm(request.POST)
    if not form.is_valid():
        return _team_page(request, team, status=400, member_form=form)
    user = form.cleaned_data["user"]
    team.members.add(user)
    note = ""
    if not access.is_engineer(user):
        accounts.give_role(user, access.ENGINEER)
        note = " They are an engineer now."
    messages.success(request, f"{user.get_username()} is in team {team.name}.{note}")
    return redirect("campaign:team", team.pk)


@admin_only
@require_POST
def team_member_remove(request: HttpRequest, team_id: int, user_id: int) -> HttpResponse:
    team = get_object_or_404(Team, pk=team_id)
    user = get_object_or_404(team.members, pk=user_id)
    team.members.remove(user)
    messages.success(request, f"{user.get_username()} left team {team.name}; their runs stay with the team.")
    return redirect("campaign:team", team.pk)


@admin_only
@require_POST
def configuration_move(request: HttpRequest, configuration_id: int) -> HttpResponse:
    configuration = get_object_or_404(SearchConfiguration.objects.select_related("team"), pk=configuration_id)
    before = configuration.team
    form = MoveConfigurationForm(request.POST)
    if form.is_valid() and form.cleaned_data["team"] != before:
        configuration.team = form.cleaned_data["team"]
        configuration.save(update_fields=["team"])
        messages.success(
            request,
            f"{configuration.name} ({configuration.pool.name}) moved from team {before.name} to "
            f"{configuration.team.name}: their engineers submit its runs now.",
        )
        return redirect("campaign:team", configuration.team.pk)
    messages.error(request, "Choose another team to move the configuration to.")
    return redirect("campaign:team", before.pk)
