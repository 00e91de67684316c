"""The demo page and the admin's usage charts in a real Chromium, driven by Playwright.

Debian's ``chromium`` package (``/usr/bin/chromium``, or ``OCR_TEST_CHROMIUM``) is driven
headless; Playwright never downloads a browser. The pages are served by pytest-django's live
server (a thread of this process, so settings overrides apply) with the real embedded Triton.
Screenshots go to ``OCR_TEST_ARTIFACTS`` (default ``var/test-artifacts/``).
"""

import base64
import datetime as dt
import io
import os
import re
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.utils import timezone
from PIL import Image
from playwright.sync_api import sync_playwright

from ocr_api.models import ApiKey, OcrRequest

from tests.helpers import DATA, IMAGES
from tests.image_factory import with_orientation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.triton, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("OCR_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-quic",
                 "--disable-sync"]
ARTIFACTS = Path(os.environ.get("OCR_TEST_ARTIFACTS",
                                Path(django_settings.BASE_DIR) / "var" / "test-artifacts"))
DESKTOP = {"width": 1100, "height": 820}
PHONE = {"width": 390, "height": 844}
#: How far (CSS pixels) a drawn corner may be from the API's point scaled to the display.
TOLERANCE_PX = 2.0
PASSWORD = "pw-123-long-enough"

# Where every drawn corner is on screen, and where the picture is, read from the layout.
READ_DRAWING = """() => {
  const image = document.getElementById("result-image");
  const rect = image.getBoundingClientRect();
  const boxes = Array.from(document.querySelectorAll("#overlay polygon.box")).map(polygon => {
    const matrix = polygon.getScreenCTM();
    return Array.from(polygon.points).map(p => {
      const q = p.matrixTransform(matrix);
      return [q.x, q.y];
    });
  });
  return {left: rect.left, top: rect.top, width: rect.width, height: rect.height,
          naturalWidth: image.naturalWidth, naturalHeight: image.naturalHeight, boxes: boxes};
}"""

# Drops a file on the drop zone the way a browser does (a DragEvent carrying a DataTransfer).
DROP_FILE = """([name, type, data]) => {
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, {type: type}));
  const zone = document.getElementById("drop-zone");
  for (const kind of ["dragenter", "dragover", "drop"]) {
    zone.dispatchEvent(new DragEvent(kind, {dataTransfer: transfer, bubbles: true,
                                            cancelable: true}));
  }
}"""


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium for this module's tests."""
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is needed for the browser tests and is not at {CHROMIUM}: "
                    "install Debian's package (apt-get install -y chromium) or set "
                    "OCR_TEST_CHROMIUM", pytrace=False)
    # Playwright's sync API keeps an asyncio loop running in this thread, which makes Django
    # refuse ORM calls from the test (and the database teardown) as "async". Nothing here is
    # async: the live server answers in its own thread.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                  args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def open_page(browser, live_server, live_triton):
    """``open_page(path, viewport=DESKTOP, **context options)`` -> a page of the live server.

    Uncaught JavaScript errors on any page fail the test.
    """
    contexts, errors = [], []

    def open_(path: str, viewport: dict = DESKTOP, **options):
        context = browser.new_context(viewport=viewport, base_url=live_server.url, **options)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path)
        return page

    yield open_
    for context in contexts:
        context.close()
    assert errors == []


@pytest.fixture
def artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def upload(page, path: Path) -> dict:
    """Pick ``path`` in the file input; the API's JSON answer once the page has drawn it."""
    with page.expect_response(lambda r: r.url.endswith("/api/ocr")) as answer:
        page.set_input_files("#image-input", str(path))
    body = answer.value.json()
    if answer.value.ok:
        page.wait_for_selector(f'#result[data-request-id="{body["request_id"]}"]')
    else:
        page.wait_for_selector(f'#error[data-request-id="{body["request_id"]}"]')
    return body


def assert_boxes_drawn_where_the_api_put_them(page, body: dict) -> dict:
    """Every box is drawn, each corner within TOLERANCE_PX of the API's point scaled to the
    displayed picture. Returns the drawing read from the page."""
    drawing = page.evaluate(READ_DRAWING)
    width, height = body["image"]["width"], body["image"]["height"]
    # The browser shows the picture upright, in the API's frame.
    assert (drawing["naturalWidth"], drawing["naturalHeight"]) == (width, height)
    scale_x, scale_y = drawing["width"] / width, drawing["height"] / height
    assert scale_x == pytest.approx(scale_y, rel=0.01)
    assert len(drawing["boxes"]) == len(body["boxes"])
    for drawn, box in zip(drawing["boxes"], body["boxes"]):
        assert len(drawn) == 4
        for (sx, sy), (x, y) in zip(drawn, box["points"]):
            assert abs(sx - (drawing["left"] + x * scale_x)) <= TOLERANCE_PX
            assert abs(sy - (drawing["top"] + y * scale_y)) <= TOLERANCE_PX
    count = len(body["boxes"])
    assert page.inner_text("#summary").startswith(f"{count} box")
    return drawing


def assert_real_png(path: Path, min_width: int, min_height: int) -> None:
    """``path`` is a PNG of at least that size with real content (not one flat colour)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    with Image.open(io.BytesIO(data)) as image:
        assert image.width >= min_width and image.height >= min_height
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
        assert colours is None or len(colours) > 50


def seed_history(keys: list, days: int) -> list[tuple]:
    """Audit rows for the ``days`` days before today: each key busier each day, a few
    refusals, latencies spread out. Returns ``(days_ago, key, http_status, error_code)`` per
    row."""
    history = []
    for days_ago in range(1, days + 1):
        for k, key in enumerate(keys):
            history += [(days_ago, key, 200, "")] * (2 + 3 * k + (days - days_ago))
        if days_ago % 2 == 0:
            history.append((days_ago, keys[-1], 400, "image_undecodable"))
        if days_ago == 3:
            history += [(days_ago, keys[0], 429, "rate_limited")] * 2
    OcrRequest.objects.bulk_create(
        OcrRequest(request_id=f"seed-{days_ago}", api_key=key, http_status=status,
                   error_code=code,
                   total_ms=500.0 + 30 * days_ago + (i * 37) % 400 if status == 200 else 2.0)
        for i, (days_ago, key, status, code) in enumerate(history))
    # `created` is auto_now_add: move each day's rows to noon of their day.
    for days_ago in range(1, days + 1):
        day = timezone.localdate() - dt.timedelta(days=days_ago)
        OcrRequest.objects.filter(request_id=f"seed-{days_ago}").update(
            created=timezone.make_aware(dt.datetime.combine(day, dt.time(12))))
    return history


def test_demo_draws_every_box_where_the_api_put_it(open_page, api_key, artifacts):
    page = open_page("/")
    page.fill("#api-key", api_key[1])
    body = upload(page, IMAGES / "korean.png")

    assert len(body["boxes"]) == 6
    drawing = assert_boxes_drawn_where_the_api_put_them(page, body)
    assert drawing["width"] == pytest.approx(629, abs=0.5)     # room enough: its own size
    assert page.is_hidden("#error")
    assert f"{body['timing_ms']['total']:,.1f} ms" in page.inner_text("#summary")
    shown_json = page.inner_text("#json")
    assert body["request_id"] in shown_json and '"boxes"' in shown_json
    # The key is kept for this tab only: sessionStorage, never localStorage or a cookie.
    assert page.evaluate("sessionStorage.getItem('ocrDemo.apiKey')") == api_key[1]
    assert page.evaluate("localStorage.length") == 0
    assert all(api_key[1] not in c["value"] for c in page.context.cookies())

    page.screenshot(path=str(artifacts / "demo.png"))
    assert_real_png(artifacts / "demo.png", DESKTOP["width"], DESKTOP["height"])


def test_demo_draws_each_word_on_its_own_box_when_asked(open_page, api_key):
    page = open_page("/")
    page.fill("#api-key", api_key[1])
    body = upload(page, IMAGES / "english.png")
    words = [word for line in body["lines"] for word in line["words"]]
    assert len(words) > len(body["boxes"])          # a line's box holds several words

    page.check("#show-words")
    drawn = page.evaluate("""() => Array.from(document.querySelectorAll(
        "#overlay polygon.word")).map(p => [p.getAttribute("points"),
                                            p.querySelector("title").textContent])""")
    assert [[[float(v) for v in corner.split(",")] for corner in points.split()]
            for points, _ in drawn] == [word["points"] for word in words]
    assert [title.split("“")[1].split("”")[0] for _, title in drawn] == [
        word["text"] for word in words]
    assert page.locator("#overlay polygon.box").count() == 0
    page.uncheck("#show-words")
    assert page.locator("#overlay polygon.box").count() == len(body["boxes"])
    assert page.locator("#overlay polygon.word").count() == 0


def test_exif_rotated_photo_on_a_phone_screen(open_page, api_key, artifacts, tmp_path):
    # A camera's raw pixels, lying on their side, with "rotate 90° to view" in EXIF.
    photo = tmp_path / "korean-rotated.jpg"
    photo.write_bytes(with_orientation(Image.open(IMAGES / "korean.png").convert("RGB"), 6,
                                       "JPEG", quality=95))
    page = open_page("/", viewport=PHONE, device_scale_factor=2, is_mobile=True,
                     has_touch=True)
    page.fill("#api-key", api_key[1])
    body = upload(page, photo)

    assert (body["image"]["width"], body["image"]["height"]) == (629, 420)
    assert len(body["boxes"]) >= 5
    drawing = assert_boxes_drawn_where_the_api_put_them(page, body)
    # The layout fits the phone: no sideways scrolling, the picture scaled into the column.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert drawing["width"] < PHONE["width"]
    page.screenshot(path=str(artifacts / "demo-phone.png"), full_page=True)
    assert_real_png(artifacts / "demo-phone.png", PHONE["width"], PHONE["height"])


def test_a_pdf_shows_every_page_with_its_boxes_and_downloads_its_formats(
        open_page, api_key, api_client, artifacts, tmp_path):
    from tests.api.test_documents import two_page_pdf

    document = tmp_path / "two-pages.pdf"
    document.write_bytes(two_page_pdf())
    # The page waits for the API as long as reading the document takes on this machine (the
    # browser's 30 s default is less than two pages take on a slow CPU).
    started = time.monotonic()
    assert api_client.post("/api/ocr", document.read_bytes(),
                           content_type="application/pdf").status_code == 200
    page = open_page("/")
    page.set_default_timeout(1000 * max(30.0, 3 * (time.monotonic() - started)))
    page.fill("#api-key", api_key[1])
    body = upload(page, document)
    assert body["document"] == {"format": "PDF", "pages": 2}
    figures = page.query_selector_all("#pages figure.page")
    assert [f.get_attribute("data-page") for f in figures] == ["1", "2"]
    for figure, answer in zip(figures, body["pages"]):
        drawn = figure.query_selector_all("polygon.box")
        assert len(drawn) == len(answer["boxes"])
        svg = figure.query_selector("svg")
        assert svg.get_attribute("viewBox") == f"0 0 {answer['width']} {answer['height']}"
    assert page.is_hidden("#stage")
    assert page.input_value("#full-text") == body["text"]
    assert page.inner_text("#summary").startswith("PDF · 2 pages · ")
    for name, expect in (("text", b"Reduce your risk"), ("pdf", b"%PDF-"),
                         ("hocr", b"ocr_page")):
        with page.expect_download() as download:
            page.click(f'.downloads button[data-format="{name}"]')
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.name.startswith("two-pages.") and expect in saved.read_bytes()[:4000]
    page.screenshot(path=str(artifacts / "demo-pdf.png"), full_page=True)


def test_truncated_image_shows_the_api_error(open_page, api_key):
    page = open_page("/")
    page.fill("#api-key", api_key[1])
    path = DATA / "bad" / "truncated.jpg"
    with page.expect_response(lambda r: r.url.endswith("/api/ocr")) as answer:
        # Dropped on the drop zone this time, not picked.
        page.evaluate(DROP_FILE, [path.name, "image/jpeg",
                                  base64.b64encode(path.read_bytes()).decode()])
    assert answer.value.status == 400
    body = answer.value.json()
    assert body["error"]["code"] == "image_undecodable"
    page.wait_for_selector(f'#error[data-request-id="{body["request_id"]}"]')

    assert page.inner_text("#error-title") == \
        "The image file is damaged or incomplete, so it cannot be read."
    assert page.inner_text("#error-message") == body["error"]["message"]
    meta = page.inner_text("#error-meta")
    assert "HTTP 400" in meta and "image_undecodable" in meta and body["request_id"] in meta
    assert page.is_hidden("#result")


def test_missing_key_is_explained_before_anything_is_sent(open_page):
    page = open_page("/")
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/api/" in r.url else None)
    page.set_input_files("#image-input", str(IMAGES / "korean.png"))
    page.wait_for_selector("#error:not([hidden])")
    assert "API key is needed" in page.inner_text("#error-title")
    assert requests == []


def test_key_created_in_admin_works_on_the_demo_page(open_page, artifacts):
    User.objects.create_superuser("admin", "admin@example.com", PASSWORD)
    page = open_page("/admin/login/?next=/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("input[type=submit]")
    assert page.locator('a[href="/admin/usage/"]').count() == 1

    # Create a key: it is shown once, in the message after saving.
    page.goto("/admin/ocr_api/apikey/add/")
    page.fill("#id_name", "browser demo")
    page.fill("#id_owner", "qa")
    with page.expect_navigation():
        page.click("input[name=_save]")
    message = page.inner_text(".messagelist")
    key = re.search(r"The API key for browser demo is: (\S+)\.", message).group(1)
    row = ApiKey.objects.get(name="browser demo")
    assert ApiKey.objects.get_from_key(key) == row
    page.goto("/admin/ocr_api/apikey/")
    assert "browser demo" in page.content() and key not in page.content()

    # Use it on the demo page. Signed in as staff, the page offers the session first.
    page.goto("/")
    assert page.is_checked('input[name="auth"][value="session"]')
    page.check('input[name="auth"][value="key"]')
    page.fill("#api-key", key)
    body = upload(page, IMAGES / "korean.png")
    assert_boxes_drawn_where_the_api_put_them(page, body)
    assert OcrRequest.objects.get(request_id=body["request_id"]).api_key == row

    # The staff session works too (CSRF token sent), audited without a key.
    page.check('input[name="auth"][value="session"]')
    with page.expect_response(lambda r: r.url.endswith("/api/ocr")) as answer:
        page.click("#run")
    session_body = answer.value.json()
    assert answer.value.status == 200 and len(session_body["boxes"]) == 6
    assert "authorization" not in answer.value.request.headers
    assert answer.value.request.headers["x-csrftoken"]
    page.wait_for_selector(f'#result[data-request-id="{session_body["request_id"]}"]')
    assert OcrRequest.objects.get(request_id=session_body["request_id"]).api_key is None

    # The usage page charts those requests, and a week of earlier traffic.
    mobile = ApiKey.objects.create_key(name="mobile app")[0]
    history = seed_history([row, mobile], days=6)
    page.goto("/admin/usage/?days=7")
    legend = page.inner_text("#requests-per-day .legend")
    assert f"browser demo ({row.prefix})" in legend and f"mobile app ({mobile.prefix})" in legend
    # Today: one segment for the key, one for the session; then one per key and earlier day.
    assert page.locator("#requests-per-day svg rect.bar").count() == 2 + 2 * 6
    assert page.locator("#latency svg circle.point").count() == 2 * 7      # p50, p95 a day
    codes = {code for _, _, _, code in history if code}
    assert page.locator("#error-rate svg rect.bar").count() == len(codes)
    assert page.inner_text('#usage-totals [data-name="requests"]') == str(2 + len(history))
    assert page.inner_text('#usage-totals [data-name="errors"]') == str(len(
        [h for h in history if h[3]]))
    page.locator("#usage").screenshot(path=str(artifacts / "usage.png"))
    assert_real_png(artifacts / "usage.png", 600, 400)
