"""Requests without a valid key: throttled per client address, counted per address and
minute instead of one audit row each, while a valid key from the same address is served."""

import pytest
from django.db.models import Sum
from rest_framework.test import APIClient

from ocr_api.models import OcrRequest, RefusalCount

from tests.helpers import IMAGES

pytestmark = pytest.mark.django_db
NOT_AN_IMAGE = b"not an image"


def junk(client: APIClient, number: int, **extra):
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key junk{number:04d}.not-a-real-key")
    return client.post("/api/ocr", data=NOT_AN_IMAGE, content_type="image/png", **extra)


@pytest.mark.triton
def test_a_flood_of_junk_keys_is_throttled_and_bounded_while_a_valid_key_is_served(
        settings, api_client, live_triton):
    settings.OCR_UNAUTHENTICATED_RATE_PER_MINUTE = 20
    flood = APIClient()
    statuses = [junk(flood, n).status_code for n in range(150)]
    assert statuses[:20] == [401] * 20
    assert statuses[20:] == [429] * 130
    refused = junk(flood, 999)
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    # No key at all is counted in the same window.
    assert APIClient().post("/api/ocr", data=NOT_AN_IMAGE,
                            content_type="image/png").status_code == 429

    # No audit row each: one counted row per address, minute and code.
    assert OcrRequest.objects.count() == 0
    assert RefusalCount.objects.count() <= 6            # 401, 429 (x2 at a minute's turn)
    assert RefusalCount.objects.aggregate(n=Sum("count"))["n"] == 152
    assert set(RefusalCount.objects.values_list("client_ip", "endpoint")) == {
        ("127.0.0.1", "ocr")}
    assert set(RefusalCount.objects.values_list("http_status", "error_code")) == {
        (401, "authentication_failed"), (429, "rate_limited")}

    # The same address with a valid key: served, and audited row by row.
    response = api_client.post("/api/ocr?long_side=640&recognize=false",
                               data=(IMAGES / "img_1.jpg").read_bytes(),
                               content_type="image/jpeg")
    assert response.status_code == 200 and len(response.json()["boxes"]) > 0
    assert list(OcrRequest.objects.values_list("http_status", flat=True)) == [200]


def test_each_address_has_its_own_budget_behind_a_trusted_proxy(settings):
    settings.OCR_UNAUTHENTICATED_RATE_PER_MINUTE = 3
    settings.OCR_TRUSTED_PROXIES = ["127.0.0.1"]
    client = APIClient()
    first = [junk(client, n, HTTP_X_FORWARDED_FOR="203.0.113.7").status_code for n in range(4)]
    second = [junk(client, n, HTTP_X_FORWARDED_FOR="203.0.113.8").status_code for n in range(4)]
    assert first == second == [401, 401, 401, 429]
    counted = dict(RefusalCount.objects.filter(http_status=401)
                   .values_list("client_ip", "count"))
    assert counted == {"203.0.113.7": 3, "203.0.113.8": 3}


def test_a_valid_key_is_never_charged_to_the_address(settings, api_client):
    settings.OCR_UNAUTHENTICATED_RATE_PER_MINUTE = 2
    statuses = [api_client.post("/api/ocr", data=NOT_AN_IMAGE,
                                content_type="image/png").status_code for _ in range(5)]
    assert statuses == [415] * 5
    assert OcrRequest.objects.count() == 5 and RefusalCount.objects.count() == 0
    assert [junk(APIClient(), n).status_code for n in range(3)] == [401, 401, 429]


def test_purge_audit_log_deletes_old_counts_too(settings):
    import datetime as dt

    from django.core.management import call_command
    from django.utils import timezone

    settings.OCR_AUDIT_RETENTION_DAYS = 30
    now = timezone.now().replace(second=0, microsecond=0)
    for age in (1, 31):
        RefusalCount.objects.create(minute=now - dt.timedelta(days=age), client_ip="192.0.2.1",
                                    endpoint="ocr", http_status=401,
                                    error_code="not_authenticated", count=5)
    call_command("purge_audit_log")
    assert list(RefusalCount.objects.values_list("minute", flat=True)) == [
        now - dt.timedelta(days=1)]
