"""What ``make serve`` hands its user: one expiring demo key, reused across restarts, and a
banner naming the demo page, the docs and the admin (no Triton: the key and the text only)."""

import datetime as dt
import stat
import sys

import pytest
from django.utils import timezone

from ocr_api.models import ApiKey
from ocr_ops import demo

pytestmark = pytest.mark.django_db


def test_a_restart_reuses_the_demo_key_instead_of_adding_one(tmp_path):
    path = tmp_path / "var" / "demo_api_key"
    now = timezone.now()
    key, row = demo.demo_key(path, now)
    assert row.expiry_date == now + demo.DEMO_KEY_LIFETIME == now + dt.timedelta(days=7)
    assert path.read_text() == key + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for hours in (1, 24, 5 * 24):
        assert demo.demo_key(path, now + dt.timedelta(hours=hours)) == (key, row)
    assert ApiKey.objects.count() == 1
    assert ApiKey.objects.get_from_key(key) == row and row.name == "make serve demo"


@pytest.mark.parametrize("why", ["near expiry", "revoked", "file lost"])
def test_the_demo_key_is_replaced_and_the_old_one_revoked(tmp_path, why):
    path = tmp_path / "demo_api_key"
    now = timezone.now()
    old_key, old = demo.demo_key(path, now)
    later = now
    if why == "near expiry":
        later = now + demo.DEMO_KEY_LIFETIME - dt.timedelta(hours=23)
    elif why == "revoked":
        ApiKey.objects.filter(pk=old.pk).update(revoked=True)
    else:
        path.unlink()
    key, row = demo.demo_key(path, later)
    assert key != old_key and row.expiry_date == later + demo.DEMO_KEY_LIFETIME
    assert path.read_text() == key + "\n"
    # One usable demo key at a time: a copy of the old file is worth nothing.
    assert list(ApiKey.objects.filter(name=demo.DEMO_KEY_NAME, revoked=False)) == [row]
    with pytest.raises(ApiKey.DoesNotExist):
        ApiKey.objects.get_from_key(old_key)


def test_a_key_that_is_not_the_demo_key_is_never_printed(tmp_path):
    path = tmp_path / "demo_api_key"
    _, other = ApiKey.objects.create_key(name="mobile-app")
    path.write_text(other + "\n")
    key, row = demo.demo_key(path)
    assert key != other and row.name == demo.DEMO_KEY_NAME
    assert ApiKey.objects.get_from_key(other).revoked is False    # left alone


def test_banner_names_the_demo_page_docs_admin_and_how_to_make_a_user():
    expires = dt.datetime(2031, 5, 4, 12, 30, tzinfo=dt.timezone.utc)
    text = demo.banner("http://localhost:8000", "abc.def", expires, has_admin=False)
    lines = text.splitlines()
    assert lines[0] == ("Demo page:  http://localhost:8000/  (pick a picture, see its boxes "
                        "and text)")
    assert "API key:    abc.def" in lines
    assert "expires 2031-05-04 12:30 UTC" in text
    assert ("  curl -s -H 'Authorization: Api-Key abc.def' "
            "-F image=@tests/data/images/korean.png -F language=ko "
            "http://localhost:8000/api/ocr") in lines
    assert ("  curl -s -H 'Authorization: Api-Key abc.def' "
            "-F image=@tests/data/documents/ocrmypdf_linn.pdf http://localhost:8000/api/jobs"
            ) in lines
    assert "API docs:   http://localhost:8000/api/docs" in lines
    assert (f"Admin:      http://localhost:8000/admin/  (no user yet: {demo.manage_py()} "
            "createsuperuser)") in lines
    assert demo.manage_py() in (".venv/bin/python manage.py", f"{sys.executable} manage.py")
    assert "DJANGO_ALLOWED_HOSTS=localhost,127.0.0.1," in text
    with_admin = demo.banner("http://localhost:8000", "abc.def", expires, has_admin=True)
    assert "Admin:      http://localhost:8000/admin/" in with_admin.splitlines()
    assert "createsuperuser" not in with_admin
    assert "Detector:" not in with_admin


def test_banner_says_which_detector_the_defaults_serve_and_why():
    from ocr_api.detectors import Choice

    expires = dt.datetime(2031, 5, 4, 12, 30, tzinfo=dt.timezone.utc)
    text = demo.banner("http://localhost:8000", "abc.def", expires, True,
                       Choice("db", "CRAFT takes 9236 ms per 1280x736 photo here, over 500 ms"))
    assert ("Detector:   db, for requests that name none: CRAFT takes 9236 ms per 1280x736 "
            "photo here, over 500 ms (a request picks one with -F detector=craft or "
            "-F detector=db)") in text.splitlines()
