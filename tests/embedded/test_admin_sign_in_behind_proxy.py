"""The admin's sign-in guard behind nginx: failures are counted per real client address (from
X-Forwarded-For, believed from the proxy only), not per the proxy's own address."""

import re

import pytest
import requests
from requests.adapters import HTTPAdapter

from .stack import ADMIN

pytestmark = pytest.mark.slow

LIMIT = 5                       # OCR_ADMIN_LOGIN_FAILURE_LIMIT's default


class SourceAdapter(HTTPAdapter):
    """Connections from one local address (127.0.0.x), as from another machine."""

    def __init__(self, source: str):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kwargs)


def session_from(source: str) -> requests.Session:
    session = requests.Session()
    session.mount("http://", SourceAdapter(source))
    return session


def sign_in(base_url: str, source: str, username: str, password: str) -> requests.Response:
    session = session_from(source)
    form = session.get(f"{base_url}/admin/login/?next=/admin/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    return session.post(f"{base_url}/admin/login/?next=/admin/", allow_redirects=False,
                        data={"username": username, "password": password,
                              "csrfmiddlewaretoken": token})


def test_failures_lock_the_client_address_out_not_the_proxys(proxied_gateway):
    url = proxied_gateway.proxy.url
    for number in range(LIMIT - 1):
        response = sign_in(url, "127.0.0.51", f"guess{number}", "wrong")
        assert response.status_code == 200 and "Please enter the correct" in response.text
    assert sign_in(url, "127.0.0.51", "guess", "wrong").status_code == 429   # the limit
    locked = sign_in(url, "127.0.0.51", *ADMIN)
    assert locked.status_code == 429 and "Sign-in locked" in locked.text
    assert int(locked.headers["Retry-After"]) == 15 * 60
    # Another client, through the same proxy: signs in.
    other = sign_in(url, "127.0.0.52", *ADMIN)
    assert other.status_code == 302 and other.headers["Location"] == "/admin/"
    # Recorded: the real address, each failure.
    rows = proxied_gateway.query("SELECT ip_address, COUNT(*) FROM axes_accessfailurelog "
                                 "GROUP BY ip_address")
    assert rows == [("127.0.0.51", LIMIT + 1)]
