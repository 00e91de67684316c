"""What ``make serve`` hands its user: the demo API key and the banner that says where
everything is.

The demo key is one key, reused by every ``make serve`` until it nears its expiry, then
replaced (the old one revoked): never a new, never-expiring key per start on a server that
listens on every interface. Its plain text is kept in ``var/demo_api_key`` (mode 0600, like
``var/secret_key``) so that a restart can print it again; the database holds only its hash.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from ocr_api.detectors import Choice
from ocr_api.models import ApiKey

#: The name (and owner) of the demo key in admin's key list.
DEMO_KEY_NAME = "make serve demo"
DEMO_KEY_OWNER = "local"
#: How long a new demo key lives.
DEMO_KEY_LIFETIME = dt.timedelta(days=7)
#: A key closer than this to its expiry is replaced rather than printed once more.
DEMO_KEY_RENEW_BEFORE = dt.timedelta(days=1)


def demo_key(path: Path, now: dt.datetime | None = None) -> tuple[str, ApiKey]:
    """The demo key: the one saved at ``path`` while it is usable for another
    :data:`DEMO_KEY_RENEW_BEFORE`, else a new one (saved there, mode 0600) expiring after
    :data:`DEMO_KEY_LIFETIME`, every older demo key revoked.

    Args:
        path: where the key's plain text is kept between runs.
        now: the current time (aware); default now.

    Returns:
        ``(key, ApiKey row)``.
    """
    now = now or timezone.now()
    saved = path.read_text().strip() if path.is_file() else ""
    if saved:
        try:
            row = ApiKey.objects.get_from_key(saved)     # unknown or revoked: DoesNotExist
        except ApiKey.DoesNotExist:
            row = None
        if (row is not None and row.name == DEMO_KEY_NAME and row.expiry_date
                and row.expiry_date > now + DEMO_KEY_RENEW_BEFORE):
            return saved, row
    ApiKey.objects.filter(name=DEMO_KEY_NAME, revoked=False).update(revoked=True)
    row, key = ApiKey.objects.create_key(name=DEMO_KEY_NAME, owner=DEMO_KEY_OWNER,
                                         expiry_date=now + DEMO_KEY_LIFETIME)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created with 0600 from the start: the key is never readable by others, even briefly.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(key + "\n")
    path.chmod(0o600)
    return key, row


def manage_py() -> str:
    """How to run manage.py from the repository root with this Python (``.venv/bin/python
    manage.py`` under ``make``)."""
    python = Path(sys.executable)
    try:
        python = python.relative_to(Path(settings.BASE_DIR))
    except ValueError:
        pass
    return f"{python} manage.py"


def banner(base_url: str, key: str, expires: dt.datetime, has_admin: bool,
           detector: "Choice | None" = None) -> str:
    """What ``make serve`` prints once the gateway answers: the demo page, the API key with its
    expiry and a curl line, the text detector the defaults serve and why, the API docs, the
    admin (and how to make its first user), other devices, and how to stop.

    Args:
        base_url: the gateway's address, e.g. ``http://localhost:8000``.
        key: the demo API key.
        expires: its expiry.
        has_admin: whether an active staff user exists already.
        detector: :func:`ocr_api.detectors.choose`'s answer (None: not said).
    """
    admin = f"{base_url}/admin/"
    if not has_admin:
        admin += f"  (no user yet: {manage_py()} createsuperuser)"
    return "\n".join([
        f"Demo page:  {base_url}/  (pick a picture, see its boxes and text)",
        f"API key:    {key}",
        f"            expires {timezone.localtime(expires):%Y-%m-%d %H:%M %Z}; the next "
        "make serve prints it again until then",
        "Try it:",
        f"  curl -s -H 'Authorization: Api-Key {key}' "
        f"-F image=@tests/data/images/korean.png -F language=ko {base_url}/api/ocr",
        "  (a PDF or TIFF goes in the same field: "
        "-F image=@tests/data/documents/ocrmypdf_linn.pdf)",
        f"Jobs:       POST {base_url}/api/jobs for documents over the "
        f"{settings.OCR_MAX_PAGES}-page limit of /api/ocr (read in the background; poll "
        "GET /api/jobs/<id>), e.g.",
        f"  curl -s -H 'Authorization: Api-Key {key}' "
        f"-F image=@tests/data/documents/ocrmypdf_linn.pdf {base_url}/api/jobs",
        *([f"Detector:   {detector.detector}, for requests that name none: {detector.reason} "
           "(a request picks one with -F detector=craft or -F detector=db)"]
          if detector else []),
        f"API docs:   {base_url}/api/docs",
        f"Admin:      {admin}",
        "Other devices (a phone on this network): add this machine's address to "
        "DJANGO_ALLOWED_HOSTS, e.g.\n"
        "            DJANGO_ALLOWED_HOSTS=localhost,127.0.0.1,192.168.1.20 make serve",
        "Stop:       Ctrl-C",
        "",
    ])
