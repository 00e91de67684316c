"""What the proxies in front of gunicorn may send it, against what the gateway drains of an
unread body and what gunicorn's header limits take (the tests through the real nginx are in
tests/embedded/)."""

from django.conf import settings

from ocr_proxy.config import HEADER_BUFFER_BYTES, UPSTREAM_KEEPALIVE_S

from .test_deploy import DEPLOY, env_file, gunicorn_settings, resource, size_bytes


def test_the_gateway_drains_every_body_the_ingress_lets_through():
    annotations = resource("Ingress", "ocr-gateway")["metadata"]["annotations"]
    for name in ("ocr-gateway", "ocr-gateway-jobs"):
        size = resource("Ingress", name)["metadata"]["annotations"][
            "nginx.ingress.kubernetes.io/proxy-body-size"]
        assert size_bytes(size) <= settings.OCR_UNREAD_BODY_MAX_BYTES, name
    assert settings.OCR_UNREAD_BODY_MAX_BYTES >= settings.OCR_LARGEST_BODY_BYTES
    # and retries nothing it has sent (no non_idempotent).
    assert annotations["nginx.ingress.kubernetes.io/proxy-next-upstream"] == "error timeout"


def test_gunicorns_limits_sit_above_nginxs():
    conf = gunicorn_settings({})
    assert conf["limit_request_line"] >= HEADER_BUFFER_BYTES - 2       # line without CRLF
    assert conf["limit_request_field_size"] > HEADER_BUFFER_BYTES
    assert conf["limit_request_fields"] > 1000                          # nginx's most lines


def test_gunicorn_keeps_idle_connections_longer_than_the_proxies_in_front():
    values, _ = env_file(DEPLOY / ".env.example")
    keepalive = gunicorn_settings({})["keepalive"]
    assert keepalive == int(values["GUNICORN_KEEPALIVE"])
    assert keepalive > UPSTREAM_KEEPALIVE_S
    assert keepalive > 60                     # ingress-nginx's upstream-keepalive-timeout
