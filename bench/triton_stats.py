"""Triton's per-model statistics, as differences over one benchmark run.

Triton keeps, per model, cumulative counts and nanoseconds of: ``queue`` (waiting for a
model instance), ``compute_input`` (copying inputs in - for a Python-backend model, into the
stub's shared memory), ``compute_infer`` (the model's own execution), ``compute_output``
(copying outputs out), and ``cache_hit`` / ``cache_miss`` of the response cache. An
ensemble's own entry covers its whole request; its composing models have their own entries.
Beside them, what runs in each model: :func:`engine_descriptions`, from Triton's metrics.
"""

from __future__ import annotations

import re
import time
import urllib.request

STAGES = ("queue", "compute_input", "compute_infer", "compute_output")


def snapshot(client) -> dict[str, dict]:
    """Cumulative statistics of every model: ``{model: {stage: (count, ns)}}``.

    ``stage`` is one of :data:`STAGES`, ``success``, ``fail``, ``cache_hit``, ``cache_miss``;
    ``inference_count`` and ``execution_count`` are plain ints.
    """
    stats = client.get_inference_statistics(as_json=True)
    models = {}
    for entry in stats.get("model_stats", []):
        inference = entry.get("inference_stats", {})
        model = {stage: (int(inference.get(stage, {}).get("count", 0)),
                         int(inference.get(stage, {}).get("ns", 0)))
                 for stage in (*STAGES, "success", "fail", "cache_hit", "cache_miss")}
        model["inference_count"] = int(entry.get("inference_count", 0))
        model["execution_count"] = int(entry.get("execution_count", 0))
        models[entry["name"]] = model
    return models


def snapshot_after(client, before: dict, model: str, requests: int,
                   timeout_s: float = 30.0) -> dict[str, dict]:
    """A :func:`snapshot` once ``model`` has counted ``requests`` more successes than in
    ``before``. Triton records a request's statistics after it has sent the answer, so a
    snapshot taken as soon as the last answer arrives can miss it (seen with the ensemble on a
    loaded 2-core machine).

    Raises:
        TimeoutError: not counted within ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        after = snapshot(client)
        counted = after.get(model, {}).get("success", (0, 0))[0] \
            - before.get(model, {}).get("success", (0, 0))[0]
        if counted >= requests:
            return after
        if time.monotonic() > deadline:
            raise TimeoutError(f"{model}: {counted} of {requests} requests counted by Triton "
                               f"within {timeout_s:.0f} s")
        time.sleep(0.05)


def per_request(before: dict, after: dict, requests: int) -> dict[str, dict]:
    """Mean time per benchmark request of each stage of each model that ran, in ms.

    Args:
        before, after: :func:`snapshot` results around the run.
        requests: benchmark requests completed in between (each runs each model once).

    Returns:
        ``{model: {"inferences": n, "<stage>_ms": mean per request, "cache_hits": n}}`` for
        models with at least one inference in between.
    """
    result = {}
    for name, end in after.items():
        start = before.get(name, {})
        inferences = end["inference_count"] - start.get("inference_count", 0)
        if inferences <= 0:
            continue
        entry = {"inferences": inferences,
                 "cache_hits": end["cache_hit"][0] - start.get("cache_hit", (0, 0))[0]}
        for stage in STAGES:
            ns = end[stage][1] - start.get(stage, (0, 0))[1]
            entry[f"{stage}_ms"] = ns / 1e6 / max(requests, 1)
        entry["success_ms"] = (end["success"][1] - start.get("success", (0, 0))[1]) / 1e6 \
            / max(requests, 1)
        result[name] = entry
    return result


def engine_descriptions(metrics_url: str) -> dict[str, str]:
    """``{"craft v1": engine description}`` from Triton's ``ocr_engine_info`` gauge, with why
    the precision was chosen in parentheses when ``auto`` chose it (may be {})."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        if line.startswith("ocr_engine_info{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            if "model" in labels:
                choice = labels.get("choice", "")
                found[f"{labels['model']} v{labels.get('version', '1')}"] = \
                    labels.get("engine", "") + (f" ({choice})" if choice else "")
    return found
