"""Exchange tests create every persona per test; a fast password hasher keeps that cheap (the
personas' passwords are test data, not secrets)."""

import pytest


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
