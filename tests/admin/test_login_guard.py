"""The admin's sign-in guard (django-axes): failures recorded, locked out per user name and
per client address, unlocked by command; API keys never affected."""

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from ocr_admin.lockout import lockout_advice
from ocr_api.models import ApiKey

pytestmark = pytest.mark.django_db
PASSWORD = "right-horse-battery-staple"
LIMIT = 5


@pytest.fixture
def root(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    # A fast hasher: these tests check many passwords (the product keeps Django's default).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return User.objects.create_superuser("root", "root@example.com", PASSWORD)


def sign_in(username: str, password: str, address: str = "192.0.2.10", client=None):
    client = client or Client()
    response = client.post("/admin/login/?next=/admin/",
                           {"username": username, "password": password},
                           REMOTE_ADDR=address)
    return client, response


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_failures_lock_the_user_name_out_even_with_the_right_password(root, settings):
    for _ in range(LIMIT - 1):
        _, response = sign_in("root", "wrong")
        assert response.status_code == 200 and b"Please enter the correct" in response.content
    _, response = sign_in("root", "wrong")                       # the limit: locked now
    assert response.status_code == 429
    client, response = sign_in("root", PASSWORD, address="198.51.100.7")  # any address
    assert response.status_code == 429 and not signed_in(client)
    assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    page = response.content.decode()
    assert "Sign-in locked" in page and "axes_reset_username" in page
    # Every failure is recorded, and which one locked it.
    failures = AccessFailureLog.objects.filter(username="root")
    assert failures.count() == LIMIT + 1
    assert failures.filter(locked_out=True).count() == 2         # the 5th and the 6th
    assert AccessAttempt.objects.get(username="root", ip_address="192.0.2.10") \
        .failures_since_start == LIMIT


def test_failures_from_one_address_lock_that_address_out_for_every_user(root):
    for number in range(LIMIT):
        sign_in(f"guess{number}", "wrong", address="203.0.113.9")
    client, response = sign_in("root", PASSWORD, address="203.0.113.9")
    assert response.status_code == 429 and not signed_in(client)
    client, response = sign_in("root", PASSWORD, address="203.0.113.10")
    assert response.status_code == 302 and signed_in(client)


def test_the_address_is_the_client_behind_a_trusted_proxy(root, settings):
    settings.OCR_TRUSTED_PROXIES = ["127.0.0.1"]
    for number in range(LIMIT):
        Client().post("/admin/login/", {"username": f"guess{number}", "password": "wrong"},
                      REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.20")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.20"}
    client = Client()
    response = client.post("/admin/login/?next=/admin/",
                           {"username": "root", "password": PASSWORD},
                           REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.21")
    assert response.status_code == 302 and signed_in(client)     # the proxy is not locked


def test_a_right_password_before_the_limit_forgets_the_failures(root):
    for _ in range(LIMIT - 1):
        sign_in("root", "wrong")
    client, response = sign_in("root", PASSWORD)
    assert response.status_code == 302 and signed_in(client)
    assert not AccessAttempt.objects.filter(username="root").exists()


def test_an_administrator_unlocks_a_user_name_by_command(root):
    for _ in range(LIMIT):
        sign_in("root", "wrong")
    assert sign_in("root", PASSWORD)[1].status_code == 429
    call_command("axes_reset_username", "root")
    client, response = sign_in("root", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_failures_and_lockouts_are_listed_in_the_admin(root):
    User.objects.create_user("editor", "editor@example.com", PASSWORD, is_staff=True)
    for _ in range(LIMIT):
        sign_in("editor", "wrong", address="192.0.2.33")
    admin = Client()
    admin.force_login(root)
    attempts = admin.get("/admin/axes/accessattempt/").content.decode()
    assert "192.0.2.33" in attempts and ">editor<" in attempts
    failures = admin.get("/admin/axes/accessfailurelog/?locked_out__exact=1").content.decode()
    assert "1 access failure" in failures


def test_a_locked_address_keeps_using_the_api_with_its_key(root):
    for number in range(LIMIT):
        sign_in(f"guess{number}", "wrong", address="192.0.2.44")
    _, key = ApiKey.objects.create_key(name="app")
    response = Client().post("/api/ocr", data=b"not an image", content_type="image/png",
                             HTTP_AUTHORIZATION=f"Api-Key {key}", REMOTE_ADDR="192.0.2.44")
    assert response.status_code == 415


def test_the_lockout_page_says_what_to_do():
    advice = lockout_advice(15, 5)
    assert "locked for 15 minutes" in advice and "(5)" in advice
    assert "axes_reset_ip" in advice
