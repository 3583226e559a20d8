"""Who may see and do what. Every view and API endpoint asks here; nothing decides access on its own.

Roles are Django groups:
- rater:    grades pairs of the pools they are a member of; sees no configuration, run or score.
- engineer: manages their teams' configurations and runs; sees the scores of their pools, and the
            rankings of other teams only where the pool shares them (`may_see_rankings`).
- admin:    everything (superusers count as admins).
"""

from functools import wraps

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.utils.http import url_has_allowed_host_and_scheme

RATER, ENGINEER, ADMIN = "rater", "engineer", "admin"
ROLES = (RATER, ENGINEER, ADMIN)


def _groups(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_role_names", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._role_names = cached
    return cached


def is_admin(user) -> bool:
    return user.is_authenticated and (user.is_superuser or ADMIN in _groups(user))


def is_engineer(user) -> bool:
    """Engineers and admins: may see configurations, runs and scores (of their pools)."""
    return is_admin(user) or ENGINEER in _groups(user)


def is_rater(user) -> bool:
    return user.is_authenticated and RATER in _groups(user)


def roles_context(request) -> dict:
    user = request.user
    return {
        "is_admin": is_admin(user),
        "is_engineer": is_engineer(user),
        "is_rater": is_rater(user),
    }


def require(check):
    """View decorator: 403 unless check(user). Use with a role predicate above."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not check(request.user):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


# --- Scoping querysets: one helper per model ------------------------------------------------------


def pools_for(user) -> QuerySet:
    from .models import Pool

    if is_admin(user):
        return Pool.objects.all()
    if not user.is_authenticated:
        return Pool.objects.none()
    return Pool.objects.filter(members=user)


def rating_pools_for(user) -> QuerySet:
    """Pools the user grades in: member pools (admins may grade any pool they are a member of too)."""
    from .models import Pool

    if not user.is_authenticated:
        return Pool.objects.none()
    return Pool.objects.filter(members=user)


def scored_pools_for(user) -> QuerySet:
    """Pools whose configurations, runs and scores the user may see (engineers: member pools)."""
    from .models import Pool

    if not is_engineer(user):
        return Pool.objects.none()
    return pools_for(user)


def configurations_for(user) -> QuerySet:
    """Configurations the user may see: those of pools whose scores they see."""
    from .models import SearchConfiguration

    if not is_engineer(user):
        return SearchConfiguration.objects.none()
    if is_admin(user):
        return SearchConfiguration.objects.all()
    return SearchConfiguration.objects.filter(pool__members=user)


def can_manage_configuration(user, configuration) -> bool:
    """Create runs for, edit or delete: admins, and engineers of the owning team."""
    if is_admin(user):
        return True
    return is_engineer(user) and configuration.team.members.filter(pk=user.pk).exists()


def may_queue(user, pool) -> bool:
    """Send documents to the pool's judging queue (a configuration's unjudged top k): admins, and the
    pool's engineers when the pool allows it (Pool.queue_access)."""
    if is_admin(user):
        return True
    from .models import QueueAccess

    return (
        pool.queue_access == QueueAccess.ENGINEERS
        and is_engineer(user)
        and pool.members.filter(pk=user.pk).exists()
    )


def may_see_rankings(user, configuration) -> bool:
    """The one rule for a configuration's rankings (which documents its runs return, in which order), on
    every page, download and API path: admins and the owning team's engineers; every engineer of the
    pool too when the pool shares rankings (`Pool.share_rankings`). Scores are not rankings: engineers
    of the pool see every configuration's scores."""
    if can_manage_configuration(user, configuration):
        return True
    return (
        configuration.pool.share_rankings
        and is_engineer(user)
        and configurations_for(user).filter(pk=configuration.pk).exists()
    )


def documents_for(user, pool=None) -> QuerySet:
    """Documents the user may see listed (of `pool`, or of every pool they see). A document id that only
    a configuration's run brought into the pool (`Document.introduced_by`) tells what that run returned,
    so it follows `may_see_rankings`: admins, the owning team, and the pool's engineers where the pool
    shares rankings. It becomes everyone's once an admin gives it content or it is queued for judging
    (a pair: raters grade it, and its grade is in the pool's qrels)."""
    from django.db.models import Exists, OuterRef, Q

    from .models import Document, Pair, SearchConfiguration

    rows = Document.objects.filter(pool__in=pools_for(user))
    if pool is not None:
        rows = rows.filter(pool=pool)
    if is_admin(user):
        return rows
    visible = Q(introduced_by__isnull=True) | Exists(Pair.objects.filter(document=OuterRef("pk")))
    if is_engineer(user):
        own = SearchConfiguration.objects.filter(team__members=user).values("pk")
        visible |= Q(introduced_by__in=own) | Q(pool__share_rankings=True)
    return rows.filter(visible)


def runs_for(user) -> QuerySet:
    from .models import Run

    return Run.objects.filter(configuration__in=configurations_for(user))


def get_pool_or_404(user, scope, **lookup):
    """The pool from `scope(user)` (pools_for, scored_pools_for, rating_pools_for) or 404."""
    from .models import Pool

    try:
        return scope(user).get(**lookup)
    except (Pool.DoesNotExist, ValueError) as exc:  # not there (or not theirs), or a malformed value
        raise Http404("No such pool") from exc


def configuration_or_404(request, configuration_id: int, *, manage: str = ""):
    """The configuration (with its pool and team) if the user sees it, else 404; with `manage` (the words
    of the refusal), the user must also be of its team or an admin, else 403."""
    configuration = (
        configurations_for(request.user).select_related("pool", "team").filter(pk=configuration_id).first()
    )
    if configuration is None:
        raise Http404("No such configuration")
    if manage and not can_manage_configuration(request.user, configuration):
        raise PermissionDenied(manage)
    return configuration


def admin_pool_or_404(request, pool_name: str):
    """The pool an admin page is about, or 404 (the page's `require(is_admin)` has checked the role)."""
    return get_pool_or_404(request.user, pools_for, name=pool_name)


def safe_next(request, *candidates: str | None, default: str = "") -> str:
    """The first of `candidates` (a `next` field, the referer) that stays on this site (same host, and
    https when the request is), else `default`: a redirect never leaves for another site."""
    for candidate in candidates:
        if candidate and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            return candidate
    return default


def ensure_role_groups(**kwargs) -> None:
    """Create the three role groups (post_migrate). Admins get every permission of this project's models,
    so an admin who is staff but not superuser can use the Django admin."""
    from django.contrib.auth.models import Group, Permission

    for name in ROLES:
        Group.objects.get_or_create(name=name)
    admin_group = Group.objects.get(name=ADMIN)
    perms = Permission.objects.filter(
        content_type__app_label__in=["judgments", "scoring", "auth", "authtoken"]
    )
    admin_group.permissions.set(perms)
