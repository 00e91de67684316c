"""The jobs' webhook sender (ocr_jobs.webhooks): Standard Webhooks signatures checked by the
``standardwebhooks`` package on what a real local HTTPS receiver got, retries, backoff, and
every SSRF refusal. No database, no Triton; DNS is faked where a name must resolve (there is
no network here), and no test ever connects anywhere but 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
import urllib3.util.connection
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from standardwebhooks import Webhook

from ocr_jobs.webhooks import (MAX_ATTEMPTS, RETRY_DELAYS_S, CallbackUrlRefused,
                               CallbackUrlUnresolvable, Outcome, WebhookPolicy,
                               delay_bounds_s, deliver, new_message_id, new_secret,
                               next_delay_s, resolve_callback_url, signed_headers,
                               validate_callback_url)
from ocr_jobs.webhooks.addresses import classify

PAYLOAD = {"type": "job.finished", "timestamp": "2026-01-01T00:00:00Z",
           "data": {"job_id": "job_123", "status": "succeeded", "note": "secret-payload-marker"}}

# --- fixtures: a CA, a local HTTPS receiver, fake DNS, connection recording ----------------


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A throw-away CA and a server certificate it signed for localhost, hooks.test,
    127.0.0.1 and ::1: (ca.pem, server.pem, server.key)."""
    folder = tmp_path_factory.mktemp("webhook-tls")
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(_name("webhook test CA"))
               .issuer_name(_name("webhook test CA")).public_key(ca_key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5))
               .not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                            False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                              critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.DNSName("hooks.test"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1"))]
    cert = (x509.CertificateBuilder().subject_name(_name("hooks.test"))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (folder / "server.pem").write_bytes(cert.public_bytes(pem))
    (folder / "server.key").write_bytes(key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return SimpleNamespace(ca=str(folder / "ca.pem"), cert=str(folder / "server.pem"),
                           key=str(folder / "server.key"))


class Receiver:
    """An HTTP(S) server on 127.0.0.1 (or ::1) in a thread that records every request and
    answers from a script: (status, headers, delay_s) per request, the last one repeating."""

    def __init__(self, answers, tls_files=None, host="127.0.0.1"):
        self.requests: list[SimpleNamespace] = []
        self.answers = list(answers) or [(204, {}, 0)]
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(SimpleNamespace(
                    path=self.path, headers=dict(self.headers.items()), body=body))
                index = min(len(receiver.requests), len(receiver.answers)) - 1
                status, headers, delay_s = receiver.answers[index]
                if delay_s:
                    receiver.release.wait(delay_s)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up (timeout test)

            def log_message(self, *args):
                pass

        server_class = ThreadingHTTPServer
        if ":" in host:
            server_class = type("V6Server", (ThreadingHTTPServer,),
                                {"address_family": socket.AF_INET6})
        self.server = server_class((host, 0), Handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if tls_files is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls_files.cert, tls_files.key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.port = self.server.server_address[1]
        self.host_text = f"[{host}]" if ":" in host else host
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path="/hook", host=None):
        return f"{self.scheme}://{host or self.host_text}:{self.port}{path}"

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers(tls_files):
    """Starts receivers: ``receivers(answers, tls=True, host="127.0.0.1")``."""
    started = []

    def start(answers=(), tls=True, host="127.0.0.1"):
        receiver = Receiver(answers, tls_files if tls else None, host)
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


@pytest.fixture
def local_policy(tls_files):
    """Loopback allowed (the receivers run on 127.0.0.1) and the test CA trusted."""
    return WebhookPolicy(allow_private=True, ca_file=tls_files.ca)


@pytest.fixture
def fake_dns(monkeypatch):
    """``fake_dns.names[name] = [answer, answer, ...]``: the n-th lookup of ``name`` gets the
    n-th answer (the last one repeating), each a list of IP addresses. IP literals go to the
    real resolver (numeric, no DNS); any other name fails as unknown. ``fake_dns.calls``
    lists the names looked up."""
    real = socket.getaddrinfo
    state = SimpleNamespace(names={}, calls=[])

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        if isinstance(host, bytes):
            host = host.decode()
        try:
            ipaddress.ip_address(host)
            return real(host, port, family, type, proto, flags)
        except ValueError:
            pass
        if host not in state.names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        state.calls.append(host)
        answers = state.names[host]
        answer = answers[min(state.calls.count(host), len(answers)) - 1]
        infos = []
        for text in answer:
            if ":" in text:
                infos.append((socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                              (text, port, 0, 0)))
            else:
                infos.append((socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                              (text, port)))
        return infos

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return state


@pytest.fixture
def connections(monkeypatch):
    """Records every address urllib3 connects to; only loopback is really connected to,
    anything else fails at once as refused (no test reaches the outside)."""
    real = urllib3.util.connection.create_connection
    seen: list[tuple[str, int]] = []

    def create_connection(address, *args, **kwargs):
        seen.append((address[0], address[1]))
        if not ipaddress.ip_address(address[0].strip("[]")).is_loopback:
            raise ConnectionRefusedError(111, "Connection refused (test: no outside network)")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", create_connection)
    return seen


# --- signing and delivery to a real local HTTPS receiver -----------------------------------


def test_signature_verifies_at_the_receiver(receivers, local_policy, connections):
    receiver = receivers([(204, {}, 0)])
    secret, message_id = new_secret(), new_message_id()

    result = deliver(receiver.url("/hooks/ocr?token=abc"), PAYLOAD, secret, message_id,
                     local_policy)

    assert result.outcome is Outcome.DELIVERED and result.delivered
    assert result.status_code == 204 and result.error is None
    assert result.address == "127.0.0.1"
    assert connections == [("127.0.0.1", receiver.port)]
    [request] = receiver.requests
    assert request.path == "/hooks/ocr?token=abc"
    assert Webhook(secret).verify(request.body, request.headers) == PAYLOAD
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["webhook-id"] == message_id
    assert headers["webhook-signature"].startswith("v1,")
    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 60
    assert headers["content-type"] == "application/json"
    assert headers["host"] == f"127.0.0.1:{receiver.port}"
    assert json.loads(request.body) == PAYLOAD
    # A wrong secret does not verify (the receiver's check is real).
    with pytest.raises(Exception, match="signature"):
        Webhook(new_secret()).verify(request.body, request.headers)


def test_same_webhook_id_on_retry(receivers, local_policy):
    receiver = receivers([(500, {}, 0), (204, {}, 0)])
    secret, message_id = new_secret(), new_message_id()

    first = deliver(receiver.url(), PAYLOAD, secret, message_id, local_policy)
    second = deliver(receiver.url(), PAYLOAD, secret, message_id, local_policy,
                     clock=lambda: time.time() + 7)

    assert first.retryable and first.status_code == 500 and first.error == "http_status"
    assert second.delivered and second.status_code == 204
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert ids == [message_id, message_id]
    stamps = [int(r.headers["webhook-timestamp"]) for r in receiver.requests]
    assert stamps[1] > stamps[0]  # each attempt is signed at its own time
    for request in receiver.requests:
        assert Webhook(secret).verify(request.body, request.headers) == PAYLOAD


def test_name_is_pinned_to_its_checked_address_and_tls_checks_the_name(
        receivers, local_policy, fake_dns, connections):
    """The host name is resolved once, the connection goes to that answer, and TLS (SNI and
    certificate) and ``Host`` use the name, not the address."""
    receiver = receivers([(200, {}, 0)])
    fake_dns.names["hooks.test"] = [["127.0.0.1"], ["10.9.9.9"]]
    secret = new_secret()

    result = deliver(receiver.url(host="hooks.test"), PAYLOAD, secret, "msg_pin",
                     local_policy)

    assert result.delivered, result
    assert fake_dns.calls == ["hooks.test"]
    assert connections == [("127.0.0.1", receiver.port)]
    [request] = receiver.requests
    assert request.headers["Host"] == f"hooks.test:{receiver.port}"
    Webhook(secret).verify(request.body, request.headers)


def test_certificate_must_match_the_name(receivers, local_policy, fake_dns):
    receiver = receivers([(200, {}, 0)])
    fake_dns.names["other.test"] = [["127.0.0.1"]]  # not in the certificate

    result = deliver(receiver.url(host="other.test"), PAYLOAD, new_secret(), "msg_tls",
                     local_policy)

    assert result.retryable and result.error == "tls_failed"
    assert receiver.requests == []


def test_untrusted_certificate_fails_without_the_ca_file(receivers):
    receiver = receivers([(200, {}, 0)])

    result = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_ca",
                     WebhookPolicy(allow_private=True))  # the system trust store

    assert result.retryable and result.error == "tls_failed"
    assert receiver.requests == []


def test_caller_ssl_context_keeps_certificate_checks(receivers, tls_files):
    receiver = receivers([(204, {}, 0)])
    trusting = ssl.create_default_context(cafile=tls_files.ca)
    lax = ssl.create_default_context()
    lax.check_hostname, lax.verify_mode = False, ssl.CERT_NONE  # overridden: CERT_REQUIRED
    policy = WebhookPolicy(allow_private=True)

    trusted = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_ctx", policy,
                      ssl_context=trusting)
    unverified = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_ctx", policy,
                         ssl_context=lax)

    assert trusted.delivered
    assert unverified.retryable and unverified.error == "tls_failed"
    assert len(receiver.requests) == 1


def test_one_resolution_per_delivery(fake_dns, connections):
    """A name that answers a public address first and loopback next (DNS rebinding): each
    delivery resolves it exactly once and connects only to the address it checked."""
    fake_dns.names["rebind.example.com"] = [["93.184.215.14"], ["127.0.0.1"]]
    policy = WebhookPolicy()

    first = deliver("https://rebind.example.com/hook", PAYLOAD, new_secret(), "msg_rebind",
                    policy)

    assert fake_dns.calls == ["rebind.example.com"]
    assert connections == [("93.184.215.14", 443)]  # the first answer, not a new lookup
    assert first.retryable and first.error == "connect_failed"
    assert first.address == "93.184.215.14"

    second = deliver("https://rebind.example.com/hook", PAYLOAD, new_secret(), "msg_rebind",
                     policy)

    assert fake_dns.calls == ["rebind.example.com"] * 2
    assert second.permanent and second.error == "callback_url_refused"
    assert connections == [("93.184.215.14", 443)]  # no connection to the loopback answer


def test_next_checked_address_of_the_same_answer_on_connect_failure(receivers, local_policy,
                                                                    fake_dns, connections):
    receiver = receivers([(204, {}, 0)])
    fake_dns.names["hooks.test"] = [["93.184.215.14", "127.0.0.1"]]

    result = deliver(receiver.url(host="hooks.test"), PAYLOAD, new_secret(), "msg_fallback",
                     local_policy)

    assert result.delivered and result.address == "127.0.0.1"
    assert connections == [("93.184.215.14", receiver.port), ("127.0.0.1", receiver.port)]
    assert fake_dns.calls == ["hooks.test"]


def test_ipv6_receiver(receivers, local_policy):
    try:
        receiver = receivers([(204, {}, 0)], host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    secret = new_secret()

    result = deliver(receiver.url(), PAYLOAD, secret, "msg_v6", local_policy)

    assert result.delivered and result.address == "::1"
    [request] = receiver.requests
    assert request.headers["Host"] == f"[::1]:{receiver.port}"
    Webhook(secret).verify(request.body, request.headers)


def test_http_for_a_listed_host(receivers, fake_dns):
    receiver = receivers([(200, {}, 0)], tls=False)
    fake_dns.names["hooks.test"] = [["127.0.0.1"]]
    url = receiver.url(host="hooks.test")
    secret = new_secret()

    refused = deliver(url, PAYLOAD, secret, "msg_http", WebhookPolicy(allow_private=True))
    allowed = deliver(url, PAYLOAD, secret, "msg_http",
                      WebhookPolicy(allow_private=True, http_hosts=frozenset({"HOOKS.test"})))

    assert refused.permanent and refused.error == "callback_url_refused"
    assert allowed.delivered
    [request] = receiver.requests
    Webhook(secret).verify(request.body, request.headers)


# --- failures ------------------------------------------------------------------------------


def test_redirect_is_not_followed(receivers, local_policy):
    target = receivers([(204, {}, 0)])
    redirector = receivers([(302, {"Location": target.url("/elsewhere")}, 0)])

    result = deliver(redirector.url(), PAYLOAD, new_secret(), "msg_redirect", local_policy)

    assert result.retryable and result.status_code == 302 and result.error == "redirect"
    assert len(redirector.requests) == 1
    assert target.requests == []


def test_timeout_is_retryable_and_quick(receivers, local_policy):
    receiver = receivers([(204, {}, 30)])  # answers after 30 s (released at teardown)

    started = time.monotonic()
    result = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_slow", local_policy,
                     attempt_timeout_s=0.5)

    assert time.monotonic() - started < 3
    assert result.retryable and result.error == "timeout" and result.status_code is None
    assert len(receiver.requests) == 1


def test_connection_refused_is_retryable(local_policy):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    result = deliver(f"https://127.0.0.1:{port}/", PAYLOAD, new_secret(), "msg_down",
                     local_policy)

    assert result.retryable and result.error == "connect_failed"


def test_gone_is_permanent(receivers, local_policy):
    receiver = receivers([(410, {}, 0)])

    result = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_gone", local_policy)

    assert result.permanent and result.status_code == 410 and result.error == "gone"


@pytest.mark.parametrize("status, header, expected", [
    (429, "120", 120.0),
    (503, "0", 0.0),
    (503, "soon", None),
])
def test_retry_after_is_passed_on(receivers, local_policy, status, header, expected):
    receiver = receivers([(status, {"Retry-After": header}, 0)])

    result = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_busy", local_policy)

    assert result.retryable and result.status_code == status
    assert result.retry_after_s == expected


def test_retry_after_http_date(receivers, local_policy):
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=300)
    receiver = receivers([(503, {"Retry-After": when.strftime("%a, %d %b %Y %H:%M:%S GMT")},
                           0)])

    result = deliver(receiver.url(), PAYLOAD, new_secret(), "msg_busy", local_policy)

    assert 290 <= result.retry_after_s <= 301


def test_unresolvable_name_is_retryable(fake_dns, connections):
    result = deliver("https://nowhere.example.com/", PAYLOAD, new_secret(), "msg_dns",
                     WebhookPolicy())

    assert result.retryable and result.error == "callback_url_unresolvable"
    assert connections == []


def test_logs_never_show_payload_secret_or_query(receivers, local_policy, caplog):
    receiver = receivers([(500, {}, 0)])
    secret = new_secret()

    with caplog.at_level(logging.DEBUG, logger="ocr_jobs"):
        deliver(receiver.url("/hook?token=querysecret"), PAYLOAD, secret, "msg_logs",
                local_policy)

    ours = [r.getMessage() for r in caplog.records if r.name.startswith("ocr_jobs")]
    assert ours and "msg_logs" in ours[0]
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "secret-payload-marker" not in text and secret not in text
    assert "querysecret" not in "\n".join(ours)


# --- refusals ------------------------------------------------------------------------------

REFUSED = [
    # scheme, user info, syntax
    ("http://example.com/hook", "scheme"),
    ("ftp://example.com/hook", "scheme"),
    ("javascript:alert(1)", "scheme"),
    ("https://user:pass@example.com/hook", "userinfo"),
    ("https://example.com@10.0.0.1/hook", "userinfo"),
    ("https://example.com\\@10.0.0.1/", "syntax"),
    ("https:///hook", "syntax"),
    ("https://exa mple.com/", "syntax"),
    ("https://example.com:0/", "port"),
    ("https://example.com:99999/", "syntax"),
    ("https://[fe80::1%25eth0]/", "syntax"),
    ("https://bücher.example/", "syntax"),
    ("https://" + "a" * 2100 + ".com/", "syntax"),
    # IPv4 in forms that dodge naive checks
    ("https://2130706433/", "ip_form"),
    ("https://0x7f.1/", "ip_form"),
    ("https://127.1/", "ip_form"),
    ("https://017700000001/", "ip_form"),
    ("https://010.0.0.1/", "ip_form"),
    # loopback
    ("https://127.0.0.1/", "loopback"),
    ("https://127.8.9.10:8443/", "loopback"),
    ("https://[::1]/", "loopback"),
    ("https://localhost/", "loopback"),
    ("https://api.localhost/", "loopback"),
    # private: RFC 1918, CGNAT, unique-local, IPv4-mapped, NAT64, 6to4
    ("https://10.0.0.1/", "private"),
    ("https://172.16.5.4/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://100.64.0.1/", "not_global"),
    ("https://[fc00::1]/", "unique_local"),
    ("https://[fd12:3456:789a::1]/", "unique_local"),
    ("https://[::ffff:127.0.0.1]/", "loopback"),
    ("https://[::ffff:10.0.0.1]/", "private"),
    ("https://[64:ff9b::a00:1]/", "private"),
    ("https://[2002:a00:1::1]/", "private"),
    # link-local, metadata
    ("https://169.254.1.1/", "link_local"),
    ("https://[fe80::1]/", "link_local"),
    ("https://169.254.169.254/latest/meta-data/", "metadata"),
    ("https://[::ffff:169.254.169.254]/", "metadata"),
    ("https://[fd00:ec2::254]/", "metadata"),
    ("https://100.100.100.200/", "metadata"),
    ("https://metadata.google.internal/computeMetadata/v1/", "metadata"),
    ("https://METADATA.google.internal./", "metadata"),
    # unspecified, multicast, reserved
    ("https://0.0.0.0/", "unspecified"),
    ("https://[::]/", "unspecified"),
    ("https://224.0.0.1/", "multicast"),
    ("https://[ff02::1]/", "multicast"),
    ("https://240.0.0.1/", "reserved"),
    ("https://255.255.255.255/", "reserved"),
]


@pytest.mark.parametrize("url, reason", REFUSED)
def test_refused_at_validation(url, reason):
    with pytest.raises(CallbackUrlRefused) as caught:
        validate_callback_url(url, WebhookPolicy())
    error = caught.value
    assert (error.code, error.reason, error.field) == ("callback_url_refused", reason,
                                                       "callback_url")
    assert error.permanent and error.message.startswith("callback_url")


@pytest.mark.parametrize("url, reason", REFUSED)
def test_refused_delivery_makes_no_connection(url, reason, fake_dns, connections):
    result = deliver(url, PAYLOAD, new_secret(), "msg_refused", WebhookPolicy())

    assert result.permanent and result.error == "callback_url_refused"
    assert connections == [] and fake_dns.calls == []


ALWAYS_REFUSED = [
    "https://169.254.169.254/", "https://[fd00:ec2::254]/", "https://100.100.100.200/",
    "https://169.254.170.2/", "https://metadata.google.internal/", "https://169.254.1.1/",
    "https://[fe80::1]/", "https://0.0.0.0/", "https://224.0.0.1/", "https://240.0.0.1/",
    "http://10.0.0.1/",  # plain http still needs a listed host
]


@pytest.mark.parametrize("url", ALWAYS_REFUSED)
def test_refused_even_with_allow_private(url):
    with pytest.raises(CallbackUrlRefused):
        validate_callback_url(url, WebhookPolicy(allow_private=True))


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/", "https://[::1]/", "https://10.0.0.1/", "https://192.168.1.1/",
    "https://100.64.0.1/", "https://[fd12::1]/", "https://[::ffff:10.0.0.1]/",
    "https://localhost:8443/",
])
def test_allowed_with_allow_private(url):
    validate_callback_url(url, WebhookPolicy(allow_private=True))


@pytest.mark.parametrize("url, host, port, target, host_header", [
    ("https://hooks.example.com/ocr", "hooks.example.com", 443, "/ocr", "hooks.example.com"),
    ("https://Hooks.Example.COM.:8443/a/b?x=1&y=2#frag", "hooks.example.com", 8443,
     "/a/b?x=1&y=2", "hooks.example.com:8443"),
    ("https://hooks.example.com", "hooks.example.com", 443, "/", "hooks.example.com"),
    ("https://93.184.215.14:9000/h", "93.184.215.14", 9000, "/h", "93.184.215.14:9000"),
    ("https://[2606:2800:220:1::]/h", "2606:2800:220:1::", 443, "/h", "[2606:2800:220:1::]"),
    ("https://xn--bcher-kva.example/", "xn--bcher-kva.example", 443, "/",
     "xn--bcher-kva.example"),
])
def test_accepted_urls(url, host, port, target, host_header):
    """Public names and addresses, on any port (the rules are by address, not port)."""
    checked = validate_callback_url(url, WebhookPolicy())
    assert (checked.host, checked.port, checked.target, checked.host_header) == (
        host, port, target, host_header)
    assert "?" not in checked.origin and "/" not in checked.origin.split("://")[1]


@pytest.mark.parametrize("answer, reason", [
    (["10.1.2.3"], "private"),
    (["127.0.0.1"], "loopback"),
    (["169.254.169.254"], "metadata"),
    (["100.64.1.1"], "not_global"),
    (["fd00::5"], "unique_local"),
    (["::ffff:192.168.0.1"], "private"),
    (["93.184.215.14", "10.0.0.7"], "private"),        # one public, one private: refused
    (["2606:2800:220:1::", "::1"], "loopback"),
])
def test_name_resolving_to_a_refused_address(fake_dns, answer, reason):
    fake_dns.names["hooks.example.com"] = [answer]
    checked = validate_callback_url("https://hooks.example.com/h", WebhookPolicy())

    with pytest.raises(CallbackUrlRefused) as caught:
        resolve_callback_url(checked, WebhookPolicy())

    assert caught.value.reason == reason and caught.value.code == "callback_url_refused"
    assert fake_dns.calls == ["hooks.example.com"]


def test_name_resolving_to_private_is_refused_at_delivery(fake_dns, connections):
    fake_dns.names["intranet.example.com"] = [["93.184.215.14", "192.168.1.20"]]

    result = deliver("https://intranet.example.com/", PAYLOAD, new_secret(), "msg_mixed",
                     WebhookPolicy())

    assert result.permanent and result.error == "callback_url_refused"
    assert connections == []


def test_public_name_resolves_to_its_addresses(fake_dns):
    fake_dns.names["hooks.example.com"] = [["93.184.215.14", "2606:2800:220:1::",
                                            "93.184.215.14"]]
    checked = validate_callback_url("https://hooks.example.com/h", WebhookPolicy())

    resolved = resolve_callback_url(checked, WebhookPolicy())

    assert [a.compressed for a in resolved.addresses] == ["93.184.215.14", "2606:2800:220:1::"]


def test_unresolvable_name(fake_dns):
    checked = validate_callback_url("https://nowhere.example.com/", WebhookPolicy())
    with pytest.raises(CallbackUrlUnresolvable) as caught:
        resolve_callback_url(checked, WebhookPolicy())
    assert caught.value.code == "callback_url_unresolvable" and not caught.value.permanent


def test_classify_uses_the_embedded_ipv4_address():
    assert classify(ipaddress.ip_address("64:ff9b::5db8:d70e")) is None  # NAT64 of public
    assert classify(ipaddress.ip_address("::ffff:93.184.215.14")) is None
    assert classify(ipaddress.ip_address("93.184.215.14")) is None


# --- policy, signing, backoff --------------------------------------------------------------


def test_policy_from_settings():
    policy = WebhookPolicy.from_settings(SimpleNamespace(
        OCR_WEBHOOK_ALLOW_PRIVATE=True, OCR_WEBHOOK_HTTP_HOSTS="Hooks.Test, other.test ,",
        OCR_WEBHOOK_CA_FILE=""))
    assert policy.allow_private and policy.ca_file is None
    assert policy.http_hosts == frozenset({"hooks.test", "other.test"})
    assert WebhookPolicy.from_settings(SimpleNamespace(
        OCR_WEBHOOK_HTTP_HOSTS=["a.test"])).http_hosts == frozenset({"a.test"})
    assert WebhookPolicy.from_settings(object()) == WebhookPolicy()


def test_new_secret_is_standard_webhooks_format():
    secret = new_secret()
    assert secret.startswith("whsec_") and secret != new_secret()
    headers = signed_headers(secret, "msg_1", int(time.time()), '{"a":1}')
    assert Webhook(secret).verify('{"a":1}', headers) == {"a": 1}


@pytest.mark.parametrize("secret, message_id", [
    ("not-a-secret", "msg_1"),
    ("whsec_" + "A" * 8, "msg_1"),          # too short (6 bytes)
    ("whsec_!!!!", "msg_1"),                # not base64
    (None, "msg_1"),
    ("valid", "msg.with.dots"),             # '.' delimits the signed content
    ("valid", ""),
    ("valid", "x" * 200),
])
def test_bad_secret_or_message_id_is_a_caller_error(secret, message_id):
    secret = new_secret() if secret == "valid" else secret
    with pytest.raises(ValueError):
        deliver("https://hooks.example.com/", PAYLOAD, secret, message_id, WebhookPolicy())


def test_backoff_schedule():
    assert MAX_ATTEMPTS == len(RETRY_DELAYS_S) + 1
    assert RETRY_DELAYS_S[:5] == (5, 30, 120, 600, 1800)
    assert list(RETRY_DELAYS_S) == sorted(RETRY_DELAYS_S)
    for attempt, base in enumerate(RETRY_DELAYS_S, start=1):
        low, high = delay_bounds_s(attempt)
        assert low < base < high
        assert next_delay_s(attempt, random=lambda: 0.0) == low
        assert next_delay_s(attempt, random=lambda: 0.999999) == pytest.approx(high)
        assert low <= next_delay_s(attempt) <= high
    assert delay_bounds_s(MAX_ATTEMPTS) is None and next_delay_s(MAX_ATTEMPTS) is None
    assert next_delay_s(1, retry_after_s=120, random=lambda: 0.5) == 120
    assert next_delay_s(1, retry_after_s=10**9) == 24 * 3600
    with pytest.raises(ValueError):
        delay_bounds_s(0)
