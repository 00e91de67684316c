"""API keys (revoked, expired, created in admin), per-key rate limit and daily quota."""

import datetime as dt
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from ocr_api.models import ApiKey, OcrRequest, QuotaUsage, RateWindow
from ocr_api.throttling import take

pytestmark = pytest.mark.django_db
NOT_AN_IMAGE = b"plain text: refused with 415 before inference, but it counts"


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def send(client):
    return client.post("/api/ocr", data=NOT_AN_IMAGE, content_type="image/png")


def test_revoked_key_is_401():
    row, key = ApiKey.objects.create_key(name="old")
    assert send(client_for(key)).status_code == 415
    row.revoked = True
    row.save()
    response = send(client_for(key))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_expired_key_is_401():
    _, key = ApiKey.objects.create_key(name="temp",
                                       expiry_date=timezone.now() - dt.timedelta(minutes=1))
    response = send(client_for(key))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The API key has expired."


def test_rate_limit_gives_429_with_retry_after():
    _, key = ApiKey.objects.create_key(name="slow", rate_per_minute=3)
    client = client_for(key)
    assert [send(client).status_code for _ in range(3)] == [415, 415, 415]
    response = send(client)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(response["Retry-After"]) <= 60
    # Another key has its own window.
    _, other = ApiKey.objects.create_key(name="other", rate_per_minute=3)
    assert send(client_for(other)).status_code == 415


def test_rate_window_lives_in_the_shared_database():
    row, key = ApiKey.objects.create_key(name="shared", rate_per_minute=5)
    send(client_for(key))
    send(client_for(key))
    # Every worker and replica reads the same row: two images in the current minute.
    window = RateWindow.objects.get(sender=f"key:{row.prefix}")
    assert sum(window.seconds.values()) == 2


def test_daily_quota_gives_429_quota_exceeded_until_midnight():
    row, key = ApiKey.objects.create_key(name="quota", daily_quota=2, rate_per_minute=100)
    client = client_for(key)
    assert [send(client).status_code for _ in range(2)] == [415, 415]
    response = send(client)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "quota_exceeded"
    now = timezone.now()
    to_midnight = (now.replace(hour=0, minute=0, second=0, microsecond=0)
                   + dt.timedelta(days=1) - now).total_seconds()
    assert abs(int(response["Retry-After"]) - to_midnight) <= 5
    # Refused requests are audited but do not use up more quota.
    assert send(client).json()["error"]["code"] == "quota_exceeded"
    codes = list(OcrRequest.objects.filter(api_key=row).values_list("error_code", flat=True))
    assert sorted(codes) == ["quota_exceeded", "quota_exceeded", "unsupported_media_type",
                             "unsupported_media_type"]


def test_yesterdays_requests_do_not_count_against_todays_quota():
    row, key = ApiKey.objects.create_key(name="daily", daily_quota=1)
    old = OcrRequest.objects.create(request_id="old", api_key=row, http_status=200)
    OcrRequest.objects.filter(pk=old.pk).update(created=timezone.now() - dt.timedelta(days=1))
    assert send(client_for(key)).status_code == 415


def test_admin_creates_a_key_shown_once_that_works(client):
    staff = User.objects.create_superuser("admin", "admin@example.com", "pw-123-long")
    client.force_login(staff)
    response = client.post("/admin/ocr_api/apikey/add/",
                           {"name": "mobile app", "owner": "mobile team",
                            "rate_per_minute": 30, "daily_quota": ""}, follow=True)
    message = [str(m) for m in response.context["messages"]][0]
    key = re.search(r"The API key for mobile app is: (\S+)\.", message).group(1)
    row = ApiKey.objects.get(name="mobile app")
    assert (row.owner, row.rate_per_minute, row.daily_quota) == ("mobile team", 30, None)
    assert key not in row.hashed_key and row.hashed_key.startswith("sha512$$")
    assert send(client_for(key)).status_code == 415
    listing = client.get("/admin/ocr_api/apikey/")
    assert key not in listing.content.decode()          # shown once, never again


def test_admin_revoke_action(client):
    staff = User.objects.create_superuser("admin", "admin@example.com", "pw-123-long")
    client.force_login(staff)
    row, key = ApiKey.objects.create_key(name="leaked")
    client.post("/admin/ocr_api/apikey/", {"action": "revoke", "_selected_action": [row.pk]})
    assert ApiKey.objects.get(pk=row.pk).revoked
    assert send(client_for(key)).status_code == 401


def test_only_staff_can_use_admin(client):
    User.objects.create_user("user", "user@example.com", "pw-123-long")
    response = client.post("/admin/login/", {"username": "user", "password": "pw-123-long"})
    assert response.status_code == 200                      # form shown again, not logged in
    assert "_auth_user_id" not in client.session


def test_admin_key_list_shows_usage(client):
    staff = User.objects.create_superuser("admin", "admin@example.com", "pw-123-long")
    client.force_login(staff)
    row, key = ApiKey.objects.create_key(name="busy", rate_per_minute=100)
    for _ in range(3):
        send(client_for(key))
    response = client.get("/admin/ocr_api/apikey/")
    cells = re.findall(r'<td class="field-(requests_today|requests_7d|errors_7d)">(\d+)</td>',
                       response.content.decode())
    assert cells == [("requests_today", "3"), ("requests_7d", "3"), ("errors_7d", "3")]


def test_audit_admin_is_read_only(client):
    staff = User.objects.create_superuser("admin", "admin@example.com", "pw-123-long")
    client.force_login(staff)
    row = OcrRequest.objects.create(request_id="r1", http_status=200)
    assert client.get("/admin/ocr_api/ocrrequest/").status_code == 200
    assert client.get("/admin/ocr_api/ocrrequest/add/").status_code == 403
    assert client.post(f"/admin/ocr_api/ocrrequest/{row.pk}/delete/").status_code == 403
    filtered = client.get("/admin/ocr_api/ocrrequest/?http_status=200&error_code=")
    assert filtered.status_code == 200 and "r1" in filtered.content.decode()


def test_the_rate_window_slides_by_the_second_and_says_when_to_come_back():
    sender = "key:slide"
    assert take(sender, 2, 3, now=1000.2) == 0
    assert take(sender, 1, 3, now=1030.7) == 0
    # Full: the two images of second 1000 leave the window at 1060.
    assert take(sender, 1, 3, now=1059.5) == pytest.approx(0.5)
    assert take(sender, 2, 3, now=1059.5) == pytest.approx(0.5)
    assert take(sender, 3, 3, now=1059.5) == pytest.approx(30.5)   # and 1030 at 1090
    assert take(sender, 2, 3, now=1060.0) == 0                     # 1030 + these two
    assert sum(RateWindow.objects.get(sender=sender).seconds.values()) == 3


def test_quota_of_requests_refused_before_their_image_is_given_back():
    row, key = ApiKey.objects.create_key(name="refunds", daily_quota=2, rate_per_minute=100)
    client = client_for(key)
    no_image = client.post("/api/ocr", data={"language": "en"}, format="multipart")
    assert no_image.json()["error"]["code"] == "missing_image"
    assert [send(client).status_code for _ in range(3)] == [415, 415, 429]
    charged = OcrRequest.objects.filter(api_key=row, error_code="unsupported_media_type")
    assert QuotaUsage.objects.get(api_key=row).images == charged.count() == 2


def test_a_days_quota_starts_from_the_audit_log():
    # Rows written before the counter existed (an upgrade in the middle of a day) count.
    row, key = ApiKey.objects.create_key(name="upgraded", daily_quota=2, rate_per_minute=100)
    OcrRequest.objects.create(request_id="earlier", api_key=row, http_status=200)
    assert [send(client_for(key)).status_code for _ in range(2)] == [415, 429]


def test_the_new_keys_message_never_travels_in_a_cookie(client):
    staff = User.objects.create_superuser("admin", "admin@example.com", "pw-123-long")
    client.force_login(staff)
    response = client.post("/admin/ocr_api/apikey/add/",
                           {"name": "secret app", "owner": "", "rate_per_minute": 30,
                            "daily_quota": ""})
    assert response.status_code == 302
    assert "messages" not in response.cookies and "messages" not in client.cookies
    shown = client.get(response["Location"])
    message = next(str(m) for m in shown.context["messages"])
    key = re.search(r"The API key for secret app is: (\S+)\.", message).group(1)
    assert all(key not in morsel.value for morsel in client.cookies.values())
