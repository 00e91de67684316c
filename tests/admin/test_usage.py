"""The admin's usage page and its JSON: requests per day per key, error rate by code, p50/p95
latency, computed from audit rows with known values (Django test client, no Triton)."""

import datetime as dt
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from ocr_admin import charts, usage
from ocr_api.models import ApiKey, OcrRequest

pytestmark = pytest.mark.django_db


def day_at(days_ago: int, hour: int = 1) -> dt.datetime:
    """``hour`` o'clock on the calendar day ``days_ago`` days before today (current zone)."""
    day = timezone.localdate() - dt.timedelta(days=days_ago)
    return timezone.make_aware(dt.datetime.combine(day, dt.time(hour)))


def add_rows(count: int, days_ago: int, key=None, status: int = 200, code: str = "",
             total_ms=100.0) -> None:
    """``count`` audit rows on that day; ``total_ms`` is one value or one per row."""
    values = total_ms if isinstance(total_ms, list) else [total_ms] * count
    rows = OcrRequest.objects.bulk_create(
        OcrRequest(request_id=f"r{days_ago}-{i}", api_key=key, http_status=status,
                   error_code=code, total_ms=value) for i, value in enumerate(values))
    # `created` is auto_now_add: move the rows to their day afterwards.
    OcrRequest.objects.filter(pk__in=[r.pk for r in rows]).update(created=day_at(days_ago))


@pytest.fixture
def staff_client(client):
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw-123-long"))
    return client


@pytest.fixture
def keys():
    mobile = ApiKey.objects.create_key(name="mobile", owner="app team")[0]
    web = ApiKey.objects.create_key(name="web", owner="web team")[0]
    return mobile, web


def test_requests_per_day_per_key(staff_client, keys):
    mobile, web = keys
    add_rows(5, 0, mobile)
    add_rows(2, 0, web)
    add_rows(3, 1, mobile)
    add_rows(4, 6, web)
    add_rows(1, 2)                     # no key: a staff session or a refused request
    add_rows(9, 7, mobile)             # outside a 7-day window, inside the default 14
    data = staff_client.get("/admin/usage.json?days=7").json()

    today = timezone.localdate()
    assert data["days"] == 7
    assert data["dates"] == [(today - dt.timedelta(days=6 - i)).isoformat() for i in range(7)]
    assert data["requests"]["total"] == 15
    assert data["requests"]["per_day"] == [4, 0, 0, 0, 1, 3, 7]
    series = {s["label"]: (s["key_prefix"], s["key_name"], s["counts"], s["total"])
              for s in data["requests"]["per_key"]}
    assert series == {
        f"mobile ({mobile.prefix})": (mobile.prefix, "mobile", [0, 0, 0, 0, 0, 3, 5], 8),
        f"web ({web.prefix})": (web.prefix, "web", [4, 0, 0, 0, 0, 0, 2], 6),
        usage.NO_KEY_LABEL: (None, None, [0, 0, 0, 0, 1, 0, 0], 1),
    }
    # Busiest key first.
    assert [s["total"] for s in data["requests"]["per_key"]] == [8, 6, 1]
    assert staff_client.get("/admin/usage.json").json()["requests"]["total"] == 24


def test_error_rate_by_code(staff_client, keys):
    mobile, _ = keys
    add_rows(12, 0, mobile)
    add_rows(5, 0, mobile, status=400, code="image_undecodable", total_ms=3.0)
    add_rows(2, 1, mobile, status=429, code="rate_limited", total_ms=1.0)
    add_rows(1, 1, None, status=401, code="not_authenticated", total_ms=0.5)
    errors = staff_client.get("/admin/usage.json?days=7").json()["errors"]
    assert errors["total"] == 8
    assert errors["rate"] == 0.4                      # 8 of 20
    assert errors["per_day"][-2:] == [3, 5]
    assert errors["by_code"] == [
        {"code": "image_undecodable", "status": 400, "count": 5, "rate": 0.25},
        {"code": "rate_limited", "status": 429, "count": 2, "rate": 0.1},
        {"code": "not_authenticated", "status": 401, "count": 1, "rate": 0.05},
    ]


def test_latency_percentiles_per_day_and_window(staff_client, keys):
    mobile, web = keys
    add_rows(20, 0, mobile, total_ms=[10.0 * i for i in range(20, 0, -1)])   # 10 … 200
    add_rows(2, 2, web, total_ms=[7.0, 5.0])
    # Refusals and rows without a time are not latency samples.
    add_rows(3, 0, mobile, status=415, code="unsupported_media_type", total_ms=9000.0)
    add_rows(1, 0, mobile, total_ms=None)
    latency = staff_client.get("/admin/usage.json?days=3").json()["latency_ms"]
    # Nearest rank: p50 of 20 values is the 10th, p95 the 19th.
    assert latency["per_day"] == [
        {"date": (timezone.localdate() - dt.timedelta(days=2)).isoformat(),
         "count": 2, "p50": 5.0, "p95": 7.0},
        {"date": (timezone.localdate() - dt.timedelta(days=1)).isoformat(),
         "count": 0, "p50": None, "p95": None},
        {"date": timezone.localdate().isoformat(), "count": 20, "p50": 100.0, "p95": 190.0},
    ]
    # Over the window: 5, 7, 10 … 200 (22 values): the 11th is 90, the 21st 190.
    assert (latency["count"], latency["p50"], latency["p95"]) == (22, 90.0, 190.0)


def test_nearest_rank_percentiles_match_a_sorted_list(keys):
    values = [3.5, 1.0, 8.25, 2.0, 13.0, 5.0, 21.0]
    add_rows(len(values), 0, keys[0], total_ms=values)
    result = usage.percentiles(OcrRequest.objects.all(), "total_ms", wanted=(1, 50, 95, 100))
    ordered = sorted(values)
    assert result == {"count": 7, "p1": ordered[0], "p50": ordered[3], "p95": ordered[6],
                      "p100": ordered[6]}
    assert usage.percentiles(OcrRequest.objects.none(), "total_ms") == \
        {"count": 0, "p50": None, "p95": None}


def test_usage_page_draws_the_three_charts(staff_client, keys):
    mobile, web = keys
    add_rows(6, 0, mobile, total_ms=[50.0, 60.0, 70.0, 80.0, 90.0, 400.0])
    add_rows(2, 1, web)
    add_rows(2, 0, web, status=400, code="image_undecodable")
    response = staff_client.get("/admin/usage/?days=7")
    assert response.status_code == 200
    html = response.content.decode()
    assert response.context["summary"]["requests"]["total"] == 10
    assert response.context["error_percent"] == "20.0"
    # Stacked bars: today has a 6-request mobile segment and a 2-request web segment.
    bars = re.findall(r'<rect class="bar"[^>]*data-category="([^"]+)" data-series="([^"]+)" '
                      r'data-value="(\d+)"', html)
    today = timezone.localdate().isoformat()
    assert (today, f"mobile ({mobile.prefix})", "6") in bars
    assert (today, f"web ({web.prefix})", "2") in bars
    # One error bar, for its code.
    assert re.findall(r'<rect class="bar"[^>]*data-category="image_undecodable" '
                      r'data-value="([\d.]+)"', html) == ["0.2"]
    # Latency dots for the two days with answered requests: today p50 70, p95 400.
    points = re.findall(r'<circle class="point"[^>]*data-category="([^"]+)" '
                        r'data-series="(p\d+)" data-value="([\d.]+)"', html)
    assert (today, "p50", "70.0") in points and (today, "p95", "400.0") in points
    assert len(points) == 4
    assert 'href="/admin/usage.json?days=7"' in html


def test_usage_is_linked_from_the_admin_index(staff_client):
    assert 'href="/admin/usage/"' in staff_client.get("/admin/").content.decode()


def test_usage_is_staff_only(client):
    assert client.get("/admin/usage.json").status_code == 302      # to the login page
    client.force_login(User.objects.create_user("user", "user@example.com", "pw-123-long"))
    response = client.get("/admin/usage/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_without_key_permissions_never_see_a_key_hash(client, keys):
    mobile, web = keys
    add_rows(3, 0, mobile)
    add_rows(1, 0, web)
    client.force_login(User.objects.create_user("viewer", password="pw-123-long",
                                                is_staff=True))
    body = client.get("/admin/usage.json").content.decode()
    page = client.get("/admin/usage/").content.decode()
    for key in (mobile, web):
        # The row id is "<prefix>.<sha512 hash>": neither it nor the hash may leak.
        hashed = key.hashed_key.split("$")[-1]
        assert key.pk.startswith(key.prefix + ".") and len(hashed) > 40
        for text in (body, page):
            assert key.pk not in text and hashed not in text
        assert f'"key_prefix": "{key.prefix}", "key_name": "{key.name}"' in body


def test_window_is_bounded():
    assert usage.window_days("30") == 30
    assert usage.window_days("100000") == usage.MAX_DAYS
    assert usage.window_days("0") == 1
    assert usage.window_days("seven") == usage.window_days(None) == usage.DEFAULT_DAYS


def test_charts_escape_labels_and_scale_bars():
    svg = charts.stacked_bar_chart(
        ["a", "b"], [{"label": "<script>", "color": "#000", "values": [4, 2]}], "t")
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    heights = [float(h) for h in re.findall(r'<rect class="bar"[^>]*height="([\d.]+)"', svg)]
    assert heights[0] == pytest.approx(2 * heights[1], abs=0.11)
    assert charts.nice_ticks(37) == [0, 10, 20, 30, 40]
    assert charts.nice_ticks(0.8, integer=True) == [0, 1]
