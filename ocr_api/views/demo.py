"""``GET /``: the OCR demo page (a template, a stylesheet and a script; no build step).

The page calls ``POST /api/ocr`` from the browser, with an API key typed into the page (kept
in ``sessionStorage`` only) or with the logged-in staff user's session, draws the boxes with
their text, and shows the whole text ready to copy.
"""

from django.conf import settings
from ocr_contract.formats import ACCEPTED_FORMATS_TEXT
from ocr_contract.languages import LANGUAGES
from ocr_contract.parameters import PARAMETERS
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe

from .base import sync_max_pages


@require_safe
@ensure_csrf_cookie  # the staff-session mode sends the CSRF token back as X-CSRFToken
def demo_page(request):
    """Render the demo page; it tells the script whether a staff session can be used."""
    user = request.user
    staff = bool(user.is_authenticated and user.is_active and user.is_staff)
    return render(request, "ocr_api/demo.html", {
        "staff_username": user.get_username() if staff else "",
        "long_side_min": settings.OCR_LONG_SIDE_MIN,
        "long_side_max": settings.OCR_LONG_SIDE_MAX,
        "max_upload_mib": round(settings.OCR_MAX_UPLOAD_BYTES / (1024 * 1024), 1),
        "accepted_formats": ACCEPTED_FORMATS_TEXT,
        "max_pages": sync_max_pages(),
        "languages": LANGUAGES,
        "defaults": {parameter.name: parameter.default for parameter in PARAMETERS},
    })
