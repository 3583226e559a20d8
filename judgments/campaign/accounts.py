"""Accounts for a campaign, without an e-mail server: an admin creates a rater's account and is shown a
one-time link to pass on, through which the rater sets their own password.

The link carries Django's PasswordResetTokenGenerator token: it stops working once the password is set
(the token hashes the password and the last login) and after PASSWORD_RESET_TIMEOUT (3 days by
default). Nobody, the admin included, ever sees or chooses the rater's password.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from judgments import access
from judgments.models import Pool


def link_days() -> int:
    return max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)


def set_password_path(user) -> str:
    """The path of the user's one-time set-password page."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("campaign:set-password", args=[uid, default_token_generator.make_token(user)])


def user_for_link(uidb64: str, token: str):
    """The active account the link was made for, or None when it is wrong, used or expired."""
    User = get_user_model()
    try:
        pk = urlsafe_base64_decode(uidb64).decode()
        user = User.objects.get(pk=pk)
    except (TypeError, ValueError, OverflowError, User.DoesNotExist):
        return None
    if not user.is_active or not default_token_generator.check_token(user, token):
        return None
    return user


def may_get_link(admin, user) -> bool:
    """Links are for the campaign's people: an admin may not take over another admin's account."""
    if user.pk == admin.pk:
        return False  # your own password: the account menu of Django's admin, or ask another admin
    return admin.is_superuser or not access.is_admin(user)


def give_role(user, role: str) -> None:
    access.ensure_role_groups()
    user.groups.add(Group.objects.get(name=role))


@transaction.atomic
def create_rater(pool: Pool, username: str, email: str = ""):
    """A new account that cannot log in until its person sets a password through the link; a rater
    and a member of `pool`."""
    User = get_user_model()
    user = User(**{User.USERNAME_FIELD: username}, email=email)
    user.set_unusable_password()
    user.save()
    give_role(user, access.RATER)
    pool.members.add(user)
    return user


def roles(user) -> list[str]:
    names = {g.name for g in user.groups.all()}
    found = [role for role in access.ROLES if role in names]
    if user.is_superuser and access.ADMIN not in found:
        found.append(access.ADMIN)
    return found
