"""The leaderboard's "recompute" button: an admin asks for every score of a pool to be recomputed in
the background (scoring.tasks.recompute_pool, run by `manage.py db_worker`)."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgments.access import get_pool_or_404, is_admin, pools_for, require, safe_next

from ..tasks import recompute_pool


@require_POST
@require(is_admin)
def recompute(request: HttpRequest, pool_name: str) -> HttpResponse:
    """POST, admins only: enqueue a full recompute of the pool and go back where the button was."""
    found = get_pool_or_404(request.user, pools_for, name=pool_name)
    recompute_pool.enqueue(found.pk)
    messages.success(
        request,
        f"Recomputing every score of {found.name} in the background; the leaderboard shows the new "
        "figures once it is done.",
    )
    back = reverse("scoring:leaderboard", args=[found.name])
    return redirect(
        safe_next(request, request.POST.get("next"), request.META.get("HTTP_REFERER"), default=back)
    )
