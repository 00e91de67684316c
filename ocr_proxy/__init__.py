"""The buffering proxy in front of gunicorn, in every deployment that runs nginx: its
configuration (:mod:`ocr_proxy.config`), written from the gateway's own settings.

docker compose writes it with ``python -m ocr_proxy`` for its nginx container (the gateway
image carries this package); ``make serve``, the benchmarks and the tests run Debian's nginx
with the same configuration (:mod:`ocr_embedded.proxy`). Kubernetes has ingress-nginx in front
instead (``deploy/k8s/gateway-ingress.yaml``). No Django here.
"""
