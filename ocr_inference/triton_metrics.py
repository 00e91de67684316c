"""Read Triton's Prometheus metrics endpoint (e.g. ``http://triton:8002/metrics``)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(url: str, timeout_s: float = 2.0) -> dict[str, list]:
    """Metric families of Triton's endpoint: ``{family name: [Sample, ...]}``.

    Raises:
        OSError: the endpoint cannot be reached within ``timeout_s`` seconds.
    """
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        text = response.read().decode("utf-8", "replace")
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def engine_info(url: str, timeout_s: float = 2.0) -> dict[str, str]:
    """``{"craft v1": "openvino 2026.4.1 INT8 LATENCY (auto: int8 812 ms, fp32 2503 ms per
    warm-up input -> int8)", ...}`` from the ``ocr_engine_info`` gauge the cpu flavour's Python
    models export: what runs and, when the precision was chosen, why; empty when unavailable
    (gpu flavour, no metrics endpoint, Triton down)."""
    try:
        samples = scrape(url, timeout_s).get("ocr_engine_info", [])
    except (OSError, ValueError):
        return {}
    return {f"{s.labels['model']} v{s.labels['version']}":
            s.labels["engine"] + (f" ({s.labels['choice']})" if s.labels.get("choice") else "")
            for s in samples}
