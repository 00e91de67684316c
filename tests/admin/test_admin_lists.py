"""The admin's key list and audit log on a 1280-pixel screen, in a real Chromium (Debian's,
driven by Playwright; no Triton): every column visible without scrolling sideways, the values
people look for (last use, expiry, revocation, timings) short and rounded.

The admin pages as staff without permissions see them are checked with Django's client.
"""

import datetime as dt
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone
from playwright.sync_api import sync_playwright

from ocr_api.models import ApiKey, OcrRequest

CHROMIUM = Path(os.environ.get("OCR_TEST_CHROMIUM", "/usr/bin/chromium"))
SCREEN = {"width": 1280, "height": 800}

# Where each column header and the table end, and how wide the page is.
LAYOUT = """() => {
  const table = document.getElementById("result_list");
  const headers = Array.from(table.querySelectorAll("thead th")).map(th => [
    th.innerText.trim(), th.getBoundingClientRect().right]);
  return {headers: headers, tableRight: table.getBoundingClientRect().right,
          pageWidth: document.documentElement.scrollWidth, screen: window.innerWidth};
}"""


def fill_the_lists() -> tuple[ApiKey, User]:
    """Keys and audit rows with the longest values the columns show."""
    admin = User.objects.create_superuser("admin-with-a-long-name", "a@example.com", "pw-123-long")
    key, _ = ApiKey.objects.create_key(
        name="mobile-app-production-eu", owner="Mobile team, Customer apps", rate_per_minute=1200,
        daily_quota=250_000, expiry_date=timezone.now() + dt.timedelta(days=30))
    revoked, _ = ApiKey.objects.create_key(name="old-web-client", owner="Web", revoked=True)
    rows = [OcrRequest(request_id=f"{i:032x}", api_key=key if i % 3 else None,
                       user=admin if i % 3 == 0 else None, endpoint="ocr_batch",
                       http_status=200 if i % 2 else 413, error_code="" if i % 2 else
                       "payload_too_large", image_format="JPEG", width=4032, height=3024,
                       box_count=312, char_count=2841, total_ms=12345.678 + i,
                       inference_ms=11987.654) for i in range(6)]
    OcrRequest.objects.bulk_create(rows)
    return key, admin


@pytest.fixture
def chromium():
    """Headless Debian Chromium (Playwright never downloads a browser)."""
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is needed and is not at {CHROMIUM}: apt-get install -y chromium "
                    "or set OCR_TEST_CHROMIUM", pytrace=False)
    # Playwright's sync API keeps an asyncio loop in this thread; the ORM calls here are not
    # async (the live server answers in its own thread).
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                 args=["--no-sandbox", "--disable-gpu"])
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("path", "wanted"), [
    ("/admin/ocr_api/apikey/", {"LAST USED", "EXPIRES", "STATE", "LIMITS"}),
    ("/admin/ocr_api/ocrrequest/", {"TIME", "SENDER", "STATUS", "TOTAL MS", "TRITON MS"}),
])
def test_admin_lists_fit_a_1280_pixel_screen(chromium, live_server, path, wanted):
    _, admin = fill_the_lists()
    client = Client()
    client.force_login(admin)
    context = chromium.new_context(viewport=SCREEN, base_url=live_server.url)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                          "url": live_server.url}])
    page = context.new_page()
    page.goto(path)
    layout = page.evaluate(LAYOUT)
    context.close()
    headers = {text.upper(): right for text, right in layout["headers"] if text}
    assert wanted <= headers.keys()
    assert layout["pageWidth"] <= SCREEN["width"], layout
    assert layout["tableRight"] <= SCREEN["width"], layout
    assert all(right <= SCREEN["width"] for right in headers.values()), layout


@pytest.mark.django_db
def test_key_list_shows_use_expiry_and_state_in_short():
    key, admin = fill_the_lists()
    OcrRequest.objects.filter(api_key=key).update(
        created=timezone.make_aware(dt.datetime(2031, 5, 4, 9, 15, 42)))
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/ocr_api/apikey/").content.decode()
    expiry = timezone.localtime(key.expiry_date).strftime("%Y-%m-%d %H:%M")
    for cell in ("1200/min · 250000/day", "2031-05-04 09:15", expiry, "active", "revoked",
                 "never"):
        assert f">{cell}</td>" in page, cell


@pytest.mark.django_db
def test_audit_log_shows_sender_status_and_whole_milliseconds():
    _, admin = fill_the_lists()
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/ocr_api/ocrrequest/").content.decode()
    for cell in ("mobile-app-production-eu", "user admin-with-a-long-name",
                 "413 payload_too_large", "JPEG 4032×3024", "12346", "11988"):
        assert cell in page, cell
    assert "12345.678" not in page and "11987.654" not in page


@pytest.mark.django_db
def test_staff_without_a_permission_get_an_admin_page_not_api_json():
    staff = User.objects.create_user("viewer", password="pw-123-long", is_staff=True)
    client = Client()
    client.force_login(staff)
    denied = client.get("/admin/ocr_api/ocrrequest/")
    assert denied.status_code == 403
    assert denied["Content-Type"].startswith("text/html")
    page = denied.content.decode()
    assert "OCR gateway administration" in page and "Permission denied" in page
    assert "A superuser can give you the permission" in page and '"code"' not in page
    missing = client.get("/admin/no/such/page/")
    assert missing.status_code == 404 and "Page not found" in missing.content.decode()
    # With the permission, the same page opens; outside the admin, errors stay JSON.
    staff.user_permissions.add(Permission.objects.get(codename="view_ocrrequest"))
    assert client.get("/admin/ocr_api/ocrrequest/").status_code == 200
    api = client.get("/api/no-such-endpoint")
    assert api.status_code == 404 and api.json()["error"]["code"] == "not_found"
