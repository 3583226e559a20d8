"""Login throttling (django-axes, judgments/login.py) on the login page and /api/token/: too many
failures for an account from an address lock both paths for the cool-off, even with the right password,
and the page says why. Nobody can bypass it by logging in as themselves, and nobody can lock an account's
owner out of the addresses they log in from."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import authenticate
from django.test import RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from config.client_ip import client_ip

PASSWORD = "correct-horse-battery"  # as in tests/conftest.py
LIMIT = 3


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 2 * LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


def page_login(client, username, password, address="10.0.0.1"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def token_login(username, password, address="10.0.0.1"):
    return APIClient().post(
        "/api/token/", {"username": username, "password": password}, format="json", REMOTE_ADDR=address
    )


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_the_login_page_locks_an_account_and_says_why(client, rater):
    for _ in range(LIMIT - 1):
        refused = page_login(client, rater.username, "wrong")
        assert refused.status_code == 200 and "Please enter a correct username" in refused.content.decode()
    page = page_login(client, rater.username, "wrong")  # the last failure allowed
    assert page.status_code == 429
    page = page_login(client, rater.username, PASSWORD)  # the right password, too late
    assert page.status_code == 429
    text = page.content.decode()
    assert "Too many failed logins for this account: logins from your address are refused" in text
    assert "refused for 15 minutes" in text and 'name="password"' in text
    assert page["Retry-After"] == str(15 * 60)
    assert not logged_in(client)


def test_the_token_endpoint_is_throttled_the_same_way(rater):
    for _ in range(LIMIT):
        assert token_login(rater.username, "wrong").status_code in (400, 429)
    locked = token_login(rater.username, PASSWORD)
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.json()["detail"]
    assert locked["Retry-After"] == str(15 * 60)
    assert not Token.objects.filter(user=rater).exists()


def test_failures_on_the_api_lock_the_page_too(client, rater):
    for _ in range(LIMIT):
        token_login(rater.username, "wrong")
    assert page_login(client, rater.username, PASSWORD).status_code == 429


def test_one_address_trying_many_accounts_is_refused_for_accounts_new_to_it(client, rater, engineer):
    assert page_login(client, rater.username, PASSWORD, address="10.0.0.9").status_code == 302  # known there
    client.logout()
    for i in range(2 * LIMIT):  # a password tried on many accounts, each below the account limit
        page_login(client, f"nobody{i}", "guess", address="10.0.0.9")
    assert page_login(client, engineer.username, PASSWORD, address="10.0.0.9").status_code == 429
    assert not logged_in(client)
    # Who has logged in from that address before (an office behind one address) still gets in ...
    assert page_login(client, rater.username, PASSWORD, address="10.0.0.9").status_code == 302
    client.logout()
    # ... and the accounts themselves are not locked: from another address the same login works.
    assert page_login(client, engineer.username, PASSWORD, address="10.0.0.10").status_code == 302
    assert logged_in(client)


def test_one_account_tried_from_many_addresses_is_refused_from_new_addresses(client, rater):
    for i in range(LIMIT):
        token_login(rater.username, "wrong", address=f"10.1.0.{i}")
    assert page_login(client, rater.username, PASSWORD, address="10.2.0.1").status_code == 429
    assert token_login(rater.username, PASSWORD, address="10.2.0.2").status_code == 429


def test_logging_in_as_oneself_does_not_wipe_the_failures_against_another_account(
    client, settings, rater, django_user_model
):
    """The bypass: guesses at an admin, each batch followed by a successful login as oneself from the same
    address. Only the first `limit` guesses are ever tried; the admin's right password is refused there."""
    settings.AXES_FAILURE_LIMIT = limit = 10
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 50  # the defaults
    admin = django_user_model.objects.create_superuser("admin-under-attack", password=PASSWORD)
    checked = 0
    for guess in range(45):
        if page_login(client, admin.username, f"guess{guess}", address="10.0.0.66").status_code != 429:
            checked += 1
        if guess % (limit - 1) == limit - 2:
            assert page_login(client, rater.username, PASSWORD, address="10.0.0.66").status_code == 302
            client.logout()
    assert checked == limit - 1  # the limit-th failure is answered with the lockout page already
    assert page_login(client, admin.username, PASSWORD, address="10.0.0.66").status_code == 429
    assert AccessAttempt.objects.filter(username=admin.username, ip_address="10.0.0.66").exists()
    assert not AccessAttempt.objects.filter(username=rater.username).exists()


def test_an_attacker_cannot_lock_the_owner_out_of_their_known_address(client, settings, django_user_model):
    settings.AXES_FAILURE_LIMIT, settings.LOGIN_ADDRESS_FAILURE_LIMIT = 10, 50  # the defaults
    django_user_model.objects.create_superuser("admin", password=PASSWORD)
    assert page_login(client, "admin", PASSWORD, address="192.0.2.10").status_code == 302  # the owner's desk
    client.logout()
    attacker = APIClient()
    for guess in range(45):  # from a few addresses, through both paths
        address = f"198.51.100.{guess % 3}"
        attacker.post("/accounts/login/", {"username": "admin", "password": f"g{guess}"}, REMOTE_ADDR=address)
        token_login("admin", f"g{guess}", address=address)
    assert token_login("admin", PASSWORD, address="198.51.100.1").status_code == 429  # the attacker's
    assert page_login(client, "admin", PASSWORD, address="203.0.113.5").status_code == 429  # any new one
    # The owner, from the address they log in from, with the right password: in, and the token too.
    assert page_login(client, "admin", PASSWORD, address="192.0.2.10").status_code == 302
    assert logged_in(client)
    assert token_login("admin", PASSWORD, address="192.0.2.10").status_code == 200
    # Their success reset their own (account, address) failures only: the attacker's still count.
    assert AccessAttempt.objects.filter(username="admin", ip_address="198.51.100.1").exists()


def test_the_lockout_ends_after_the_cool_off_and_a_success_resets_the_count(client, rater):
    for _ in range(LIMIT):
        page_login(client, rater.username, "wrong")
    assert page_login(client, rater.username, PASSWORD).status_code == 429
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16)
    )
    assert page_login(client, rater.username, PASSWORD).status_code == 302
    assert token_login(rater.username, PASSWORD).status_code == 200
    assert not AccessAttempt.objects.filter(username=rater.username).exists()


def test_authenticate_without_a_request_is_not_throttled(client, rater, caplog):
    """Commands and scripts call authenticate() without a request: no address to count, nothing to lock."""
    for _ in range(LIMIT):
        page_login(client, rater.username, "wrong")
    assert page_login(client, rater.username, PASSWORD).status_code == 429  # locked on the page
    failures = AccessAttempt.objects.get(username=rater.username).failures_since_start
    caplog.clear()
    assert authenticate(username=rater.username, password=PASSWORD) == rater
    assert authenticate(username=rater.username, password="wrong") is None
    assert authenticate(None, username=rater.username, password="wrong") is None
    # Not counted either, and no error from axes in the log.
    assert AccessAttempt.objects.get(username=rater.username).failures_since_start == failures
    assert not [r for r in caplog.records if r.levelno >= 40 and r.name.startswith("axes")]


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "203.0.113.7", "10.0.0.1"),  # no proxy trusted: the header is the client's to forge
        (1, "203.0.113.7", "203.0.113.7"),
        (1, "198.51.100.1, 203.0.113.7", "203.0.113.7"),  # the left entry was forged by the client
        (2, "198.51.100.1, 203.0.113.7", "198.51.100.1"),
        (2, "203.0.113.7", "10.0.0.1"),  # fewer entries than proxies: not to be trusted
    ],
)
def test_the_client_address_trusts_only_the_configured_proxies(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected


def test_a_script_that_only_takes_tokens_keeps_its_known_address(settings, django_user_model):
    """/api/token/ is a login: its successes make the address known to the account (as the login page's
    do), so guesses at the account from elsewhere cannot lock a script out, and they reset only their own
    (account, address) failures."""
    settings.AXES_FAILURE_LIMIT, settings.LOGIN_ADDRESS_FAILURE_LIMIT = 10, 50
    bot = django_user_model.objects.create_user("ci-bot", password=PASSWORD)
    assert token_login("ci-bot", PASSWORD, address="192.0.2.20").status_code == 200
    bot.refresh_from_db()
    assert bot.last_login is not None
    token_login("ci-bot", "typo", address="192.0.2.20")  # the script's own typo, reset by its next success
    for guess in range(30):
        token_login("ci-bot", f"g{guess}", address=f"198.51.100.{guess % 3}")
    assert token_login("ci-bot", PASSWORD, address="203.0.113.9").status_code == 429  # a new address
    assert token_login("ci-bot", PASSWORD, address="192.0.2.20").status_code == 200  # the script's own
    assert not AccessAttempt.objects.filter(username="ci-bot", ip_address="192.0.2.20").exists()
    assert AccessAttempt.objects.filter(username="ci-bot", ip_address="198.51.100.1").exists()
