"""Turn raw benchmark runs into figures: per-cell statistics, ratios, targets, Markdown, PNG.

Definitions (all per image; "mean" where Triton's statistics are involved, since Triton only
keeps sums):

* latency: client-side wall time of one request, ms; p50/p95/p99 interpolate linearly.
* throughput: answered requests / wall time of the run (first start to last answer), images/s.
* bytes: serialized inference messages between the API process and Triton per image
  (``bench.traffic``); ``wire`` is the TCP payload the kernel counted on those connections.
* compute: time spent computing - Triton's ``compute_infer`` of every model that ran, plus
  for ``split`` the client's own preprocessing and box extraction, plus for ``inprocess`` the
  view's own steps - ms.
* non-compute: mean latency minus compute: moving, copying and (de)serialising tensors and
  requests, HTTP and Django, and queueing (zero queueing at concurrency 1), ms.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import mean

from ocr_contract.tensors import ENSEMBLE

from .load import RunResult, percentile

#: Models whose compute is "the model" (replaced by the GPU figure in the projection).
MODEL_STEPS = ("craft", "refinenet")
#: Every step of the ensemble, in order.
ENSEMBLE_STEPS = ("preprocess", "craft", "refinenet", "postprocess")

TARGETS = {
    "bytes_ratio": ("bytes per image, ensemble ÷ split", "≤", 0.01),
    "non_compute_ratio": ("time moving/(de)serialising per image, ensemble ÷ split (c=1)",
                          "≤", 0.1),
    "gateway_overhead_ms": ("gateway overhead p50, ensemble − direct (c=1)", "≤", 5.0),
    "gateway_overhead_paired_ms": ("gateway overhead p50, paired: client latency − the "
                                   "gateway's own Triton call (c=1)", "≤", 5.0),
    "gateway_throughput_pct": ("throughput gap, ensemble vs direct, largest over concurrencies "
                               "(%, either way)", "≤", 5.0),
    "throughput_ratio_c4": ("throughput at c=4, ensemble ÷ in-process", "≥", 1.0),
    "memory_ratio": ("total peak RSS, ensemble (gateway + Triton) ÷ in-process", "≤", 0.6),
}


def publish(text: str, path: Path) -> None:
    """Print a bench's Markdown ``text`` and write it to ``path`` (its folder made)."""
    print(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")


def _safe_div(a, b):
    if a is None or b is None or b == 0 or (isinstance(b, float) and math.isnan(b)):
        return None
    return a / b


def cell_summary(mode: str, run: RunResult, triton: dict | None, wire: tuple | None,
                 probe_bytes: dict | None = None) -> dict:
    """Statistics of one (mode, concurrency) run.

    Args:
        mode: one of ``bench.modes.MODES``.
        run: the samples.
        triton: ``bench.triton_stats.per_request`` for the run (None without Triton).
        wire: TCP ``(sent, received)`` bytes over the run (None when not measured).
        probe_bytes: ``{image: (sent, received)}`` serialized sizes for modes whose messages
            the harness cannot see itself (the gateway's calls in ``ensemble``).
    """
    ok = [s for s in run.samples if s.ok]
    latencies = [s.latency_ms for s in ok]
    n = len(ok)
    cell = {
        "concurrency": run.concurrency,
        "requests": len(run.samples),
        "ok": n,
        "errors": sorted({s.error for s in run.samples if not s.ok})[:5],
        "budget_hit": run.budget_hit,
        "wall_s": round(run.wall_s, 3),
        "throughput_img_s": n / run.wall_s if run.wall_s > 0 else 0.0,
        "latency_ms": {
            "p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
            "p99": percentile(latencies, 99),
            "mean": mean(latencies) if latencies else math.nan,
            "min": min(latencies, default=math.nan), "max": max(latencies, default=math.nan),
        },
        "boxes_by_image": {},
    }
    for s in ok:
        cell["boxes_by_image"].setdefault(s.image, s.boxes)

    # Bytes across the API <-> inference-server boundary, per image.
    if mode == "inprocess":
        cell["bytes_per_image"] = {"sent": 0, "received": 0, "total": 0,
                                   "method": "none: the model runs in the web worker"}
    elif mode == "ensemble" and probe_bytes:
        sizes = [probe_bytes[s.image] for s in ok if s.image in probe_bytes]
        cell["bytes_per_image"] = _bytes(sizes, "protobuf ModelInferRequest/Response sizes of "
                                                "the gateway's request, replayed per image")
    else:
        sizes = [(s.sent_bytes, s.received_bytes) for s in ok if s.sent_bytes is not None]
        cell["bytes_per_image"] = _bytes(sizes, "protobuf ModelInferRequest/Response sizes")
    cell["wire_bytes_per_image"] = (None if wire is None or n == 0 else {
        "sent": wire[0] / n, "received": wire[1] / n, "total": (wire[0] + wire[1]) / n})

    # Where the time went.
    client_compute = mean(s.client_compute_ms for s in ok) if ok else 0.0
    cell["triton"] = triton
    if mode == "inprocess":
        steps = {k: mean((s.server_timing_ms or {}).get(k, 0.0) for s in ok) if ok else 0.0
                 for k in (*ENSEMBLE_STEPS, "lock_wait")}
        cell["inprocess_steps_ms"] = steps
        compute = sum(steps[k] for k in ENSEMBLE_STEPS)
        model = steps["craft"] + steps["refinenet"]
    else:
        triton = triton or {}
        steps = ENSEMBLE_STEPS if mode in ("ensemble", "direct") else MODEL_STEPS
        compute = sum(triton.get(m, {}).get("compute_infer_ms", 0.0) for m in steps) \
            + client_compute
        model = sum(triton.get(m, {}).get("compute_infer_ms", 0.0) for m in MODEL_STEPS)
    if mode == "ensemble" and ok and all(s.server_timing_ms for s in ok):
        # The gateway answers timing_ms.total (inside its view) and .inference (its gRPC call).
        cell["gateway_timing_ms"] = {
            "view_total": mean(s.server_timing_ms.get("total", 0.0) for s in ok),
            "inference_call": mean(s.server_timing_ms.get("inference", 0.0) for s in ok)}
        # Paired per request: what the gateway adds around its own Triton call. Immune to
        # Triton's compute time varying between the ensemble and direct runs.
        paired = [s.latency_ms - s.server_timing_ms.get("inference", 0.0) for s in ok]
        cell["gateway_paired_overhead_ms"] = {"p50": percentile(paired, 50),
                                              "mean": mean(paired)}
    if mode == "split" and ok:
        cell["client_steps_ms"] = {
            k: mean((s.server_timing_ms or {}).get(k, 0.0) for s in ok)
            for k in ("preprocess", "postprocess")}
    cell["client_compute_ms"] = client_compute
    cell["compute_ms"] = compute
    cell["model_compute_ms"] = model
    cell["non_compute_ms"] = cell["latency_ms"]["mean"] - compute if n else math.nan
    cell["cache_hits"] = sum(v.get("cache_hits", 0) for v in (cell["triton"] or {}).values())
    return cell


def _bytes(sizes: list[tuple], method: str) -> dict | None:
    if not sizes:
        return None
    sent = mean(s for s, _ in sizes)
    received = mean(r for _, r in sizes)
    return {"sent": sent, "received": received, "total": sent + received, "method": method}


def _cell(results: dict, mode: str, concurrency: int) -> dict | None:
    for cell in results["modes"].get(mode, {}).get("cells", []):
        if cell["concurrency"] == concurrency:
            return cell
    return None


def _total_bytes(cell, key="bytes_per_image"):
    if not cell or not cell.get(key):
        return None
    return cell[key]["total"]


def memory_totals(results: dict) -> dict:
    """Total peak memory per mode (bytes): RSS sums and PSS sums of its server processes.

    ``ensemble`` = gateway workers (and master) + Triton (and its stubs); ``direct`` and
    ``split`` = Triton + the client process (which is split's API process);
    ``inprocess`` = the baseline's gunicorn master and workers. A mode's total adds the
    peaks of its groups, an upper bound of their simultaneous peak.
    """
    groups = {"ensemble": ("gateway", "triton"), "direct": ("triton", "client"),
              "split": ("triton", "client"), "inprocess": ("inprocess",)}
    totals = {}
    for mode, names in groups.items():
        memory = results["modes"].get(mode, {}).get("memory")
        if not memory:
            continue
        present = [memory[g] for g in names if g in memory]
        totals[mode] = {
            "groups": list(names),
            "rss_bytes": sum(g["peak_rss_sum_bytes"] for g in present),
            "pss_bytes": sum(g["peak_pss_sum_bytes"] or 0 for g in present),
        }
    return totals


def summarize(results: dict, gpu_model_ms: float, network_gbps: float) -> dict:
    """Ratios, targets, the ensemble's step breakdown and the GPU projection.

    Args:
        results: the raw results (``results["modes"][mode]["cells"]``).
        gpu_model_ms: stated compute time of craft + refinenet per image on a GPU, ms.
        network_gbps: link speed for the projection of wire time between hosts, Gbit/s.
    """
    concurrencies = sorted({c["concurrency"] for m in results["modes"].values()
                            for c in m.get("cells", [])})
    per_concurrency = []
    for c in concurrencies:
        ens, direct = _cell(results, "ensemble", c), _cell(results, "direct", c)
        split, inproc = _cell(results, "split", c), _cell(results, "inprocess", c)
        p50 = lambda cell: cell["latency_ms"]["p50"] if cell else None  # noqa: E731
        tput = lambda cell: cell["throughput_img_s"] if cell else None  # noqa: E731
        nonc = lambda cell: cell["non_compute_ms"] if cell else None  # noqa: E731
        overhead = (p50(ens) - p50(direct)) if ens and direct else None
        parts = None
        if ens and direct and ens.get("gateway_timing_ms"):
            timing = ens["gateway_timing_ms"]
            parts = {
                "http_gunicorn_middleware_ms": ens["latency_ms"]["mean"] - timing["view_total"],
                "view_work_ms": timing["view_total"] - timing["inference_call"],
                "grpc_call_minus_direct_ms": timing["inference_call"]
                - direct["latency_ms"]["mean"],
            }
        per_concurrency.append({
            "concurrency": c,
            "latency_p50_ratio_ensemble_split": _safe_div(p50(ens), p50(split)),
            "latency_p50_ratio_direct_split": _safe_div(p50(direct), p50(split)),
            "bytes_ratio_ensemble_split": _safe_div(_total_bytes(ens), _total_bytes(split)),
            "wire_bytes_ratio_ensemble_split": _safe_div(
                _total_bytes(ens, "wire_bytes_per_image"),
                _total_bytes(split, "wire_bytes_per_image")),
            "gateway_overhead_p50_ms": overhead,
            "gateway_overhead_p50_pct": _safe_div(overhead * 100 if overhead is not None
                                                  else None, p50(direct)),
            "gateway_overhead_mean_ms": (ens["latency_ms"]["mean"] - direct["latency_ms"]["mean"]
                                         if ens and direct else None),
            "gateway_overhead_parts_mean_ms": parts,
            "gateway_overhead_paired_p50_ms": (ens or {}).get(
                "gateway_paired_overhead_ms", {}).get("p50"),
            "throughput_pct_ensemble_vs_direct": (
                (tput(ens) / tput(direct) - 1) * 100 if ens and direct and tput(direct) else None),
            "throughput_ratio_ensemble_inprocess": _safe_div(tput(ens), tput(inproc)),
            "non_compute_ms": {m: nonc(cell) for m, cell in (
                ("ensemble", ens), ("direct", direct), ("split", split), ("inprocess", inproc))},
            "non_compute_ratio_ensemble_split": _safe_div(nonc(ens), nonc(split)),
            "non_compute_ratio_direct_split": _safe_div(nonc(direct), nonc(split)),
        })

    memory = memory_totals(results)
    memory_ratio = _safe_div(memory.get("ensemble", {}).get("rss_bytes"),
                             memory.get("inprocess", {}).get("rss_bytes"))
    memory_ratio_pss = _safe_div(memory.get("ensemble", {}).get("pss_bytes"),
                                 memory.get("inprocess", {}).get("pss_bytes"))

    gpu = gpu_projection(results, gpu_model_ms, network_gbps)
    breakdown = step_breakdown(results)
    first = per_concurrency[0] if per_concurrency else {}
    c4 = next((r for r in per_concurrency if r["concurrency"] == 4), {})
    throughput_gaps = [abs(r["throughput_pct_ensemble_vs_direct"]) for r in per_concurrency
                       if r["throughput_pct_ensemble_vs_direct"] is not None]
    measured = {
        "bytes_ratio": first.get("bytes_ratio_ensemble_split"),
        "non_compute_ratio": first.get("non_compute_ratio_ensemble_split"),
        "gateway_overhead_ms": first.get("gateway_overhead_p50_ms"),
        "gateway_overhead_paired_ms": first.get("gateway_overhead_paired_p50_ms"),
        "gateway_throughput_pct": max(throughput_gaps) if throughput_gaps else None,
        "throughput_ratio_c4": c4.get("throughput_ratio_ensemble_inprocess"),
        "memory_ratio": memory_ratio,
    }
    targets = []
    for key, (label, op, goal) in TARGETS.items():
        value = measured[key]
        met = None if value is None else (value <= goal if op == "≤" else value >= goal)
        targets.append({"key": key, "target": label, "goal": f"{op} {goal:g}",
                        "measured": value, "met": met})
    return {"per_concurrency": per_concurrency, "memory": memory,
            "memory_ratio_rss": memory_ratio, "memory_ratio_pss": memory_ratio_pss,
            "gpu_projection": gpu, "ensemble_steps": breakdown, "targets": targets}


def gpu_projection(results: dict, gpu_model_ms: float, network_gbps: float) -> dict:
    """Latency at concurrency 1 with craft + refinenet computing at ``gpu_model_ms``.

    ``projected = mean latency - measured craft+refinenet compute + gpu_model_ms``; with a
    real network between API and Triton hosts, ``+ wire bytes * 8 / network_gbps`` more.
    """
    rows = {}
    for mode in ("ensemble", "direct", "split", "inprocess"):
        cell = _cell(results, mode, 1)
        if not cell or not cell["ok"]:
            continue
        projected = cell["latency_ms"]["mean"] - cell["model_compute_ms"] + gpu_model_ms
        wire = _total_bytes(cell, "wire_bytes_per_image") or _total_bytes(cell) or 0
        transfer_ms = wire * 8 / (network_gbps * 1e9) * 1e3 if mode != "inprocess" else 0.0
        rows[mode] = {"measured_mean_ms": cell["latency_ms"]["mean"],
                      "model_compute_ms": cell["model_compute_ms"],
                      "projected_ms": projected,
                      "network_ms": transfer_ms,
                      "projected_with_network_ms": projected + transfer_ms}
    ratio = _safe_div(rows.get("ensemble", {}).get("projected_ms"),
                      rows.get("split", {}).get("projected_ms"))
    ratio_net = _safe_div(rows.get("ensemble", {}).get("projected_with_network_ms"),
                          rows.get("split", {}).get("projected_with_network_ms"))
    measured = _safe_div(rows.get("ensemble", {}).get("measured_mean_ms"),
                         rows.get("split", {}).get("measured_mean_ms"))
    return {"gpu_model_ms": gpu_model_ms, "network_gbps": network_gbps, "modes": rows,
            "latency_ratio_ensemble_split_measured": measured,
            "latency_ratio_ensemble_split_projected": ratio,
            "latency_ratio_ensemble_split_projected_with_network": ratio_net}


def step_breakdown(results: dict) -> list[dict]:
    """The ensemble mode's time per step and stage (Triton statistics), ms per image."""
    rows = []
    for cell in results["modes"].get("ensemble", {}).get("cells", []):
        triton = cell.get("triton") or {}
        steps = []
        for model in ENSEMBLE_STEPS:
            stats = triton.get(model)
            if not stats:
                continue
            stages = {k: stats[f"{k}_ms"] for k in
                      ("queue", "compute_input", "compute_infer", "compute_output")}
            steps.append({"model": model, **stages, "total_ms": sum(stages.values())})
        ensemble = triton.get(ENSEMBLE, {})
        slowest = max(steps, key=lambda s: s["total_ms"])["model"] if steps else None
        rows.append({"concurrency": cell["concurrency"], "steps": steps,
                     "ensemble_request_ms": ensemble.get("success_ms"),
                     "client_latency_mean_ms": cell["latency_ms"]["mean"],
                     "slowest_step": slowest})
    return rows


def split_breakdown(results: dict) -> list[dict]:
    """The split mode's time per step (client and Triton), ms per image, per concurrency."""
    rows = []
    for cell in results["modes"].get("split", {}).get("cells", []):
        triton = cell.get("triton") or {}
        timing = cell.get("client_steps_ms") or {}
        row = {"concurrency": cell["concurrency"], "latency_mean_ms": cell["latency_ms"]["mean"],
               "client_preprocess_ms": timing.get("preprocess", 0.0),
               "client_postprocess_ms": timing.get("postprocess", 0.0)}
        accounted = row["client_preprocess_ms"] + row["client_postprocess_ms"]
        for model in MODEL_STEPS:
            row[model] = triton.get(model, {})
            accounted += sum(row[model].get(f"{k}_ms", 0.0) for k in (
                "queue", "compute_input", "compute_infer", "compute_output"))
        row["remainder_ms"] = row["latency_mean_ms"] - accounted
        rows.append(row)
    return rows


# --- Markdown ---------------------------------------------------------------------------

def _f(value, digits=1, suffix=""):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}{suffix}"


def _mb(value):
    return "–" if value is None else f"{value / 2**20:,.1f} MiB"


def _bytes_h(value):
    if value is None:
        return "–"
    if value >= 2**20:
        return f"{value / 2**20:,.1f} MiB"
    if value >= 1024:
        return f"{value / 1024:,.1f} KiB"
    return f"{value:,.0f} B"


def markdown(results: dict, summary: dict) -> str:
    """The Markdown report of one benchmark run."""
    cfg = results["config"]
    lines = [f"# OCR serving benchmark — {results['started']}", ""]
    lines += [
        f"- **Machine:** {results['machine']}",
        f"- **Engine (craft + refinenet):** Triton cpu flavour: "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(results.get('triton', {}).get('engines', {}).items())) or '–'};"
        f" in-process: {results.get('inprocess_engine') or '–'}",
        f"- **Command:** `{results['command']}`",
        f"- **Load:** {cfg['requests']} requests per mode and concurrency (at least 2 × "
        f"concurrency), closed loop, HTTP "
        f"{'keep-alive connections' if cfg.get('http_keep_alive') else 'a new connection per request'}, images: {', '.join(cfg['images'])} (in this order, "
        f"repeated), long side {cfg['long_side']} px; time budget {cfg['budget_s']:g} s per cell",
        f"- **Servers:** gunicorn {cfg['workers']} gthread workers × {cfg['threads']} threads "
        f"(`deploy/gunicorn.conf.py`) for the gateway and the in-process baseline; embedded "
        f"Triton, response cache **off** (cache hits seen: {results.get('cache_hits_total', 0)}), "
        f"one instance per model; client, gateway and Triton share the same CPUs",
        "",
        "## Latency, throughput, bytes",
        "",
        "Bytes are per image between the API process and Triton: serialized gRPC messages "
        "(sent / received), and the TCP payload the kernel counted (wire, both ways).",
        "",
        "| mode | c | ok | p50 ms | p95 ms | p99 ms | mean ms | img/s | sent/img | received/img"
        " | wire/img | compute ms | non-compute ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, data in results["modes"].items():
        for cell in data.get("cells", []):
            lat, b = cell["latency_ms"], cell.get("bytes_per_image") or {}
            wire = cell.get("wire_bytes_per_image") or {}
            lines.append(
                f"| {mode} | {cell['concurrency']} | {cell['ok']}/{cell['requests']} | "
                f"{_f(lat['p50'])} | {_f(lat['p95'])} | {_f(lat['p99'])} | {_f(lat['mean'])} | "
                f"{_f(cell['throughput_img_s'], 2)} | {_bytes_h(b.get('sent'))} | "
                f"{_bytes_h(b.get('received'))} | {_bytes_h(wire.get('total'))} | "
                f"{_f(cell['compute_ms'])} | {_f(cell['non_compute_ms'])} |")
    lines += ["", "## Ratios", "",
              "| c | latency p50 ensemble ÷ split | bytes ensemble ÷ split | gateway overhead p50"
              " (ensemble − direct) | throughput ensemble vs direct | throughput ensemble ÷ "
              "in-process | non-compute ms ensemble / direct / split | non-compute ensemble ÷ "
              "split (direct ÷ split) |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in summary["per_concurrency"]:
        nc = row["non_compute_ms"]
        lines.append(
            f"| {row['concurrency']} | {_f(row['latency_p50_ratio_ensemble_split'], 3)} | "
            f"{_f(row['bytes_ratio_ensemble_split'], 5)} | "
            f"{_f(row['gateway_overhead_p50_ms'])} ms ({_f(row['gateway_overhead_p50_pct'])} %) | "
            f"{_f(row['throughput_pct_ensemble_vs_direct'], 1, ' %')} | "
            f"{_f(row['throughput_ratio_ensemble_inprocess'], 2)} | "
            f"{_f(nc['ensemble'])} / {_f(nc['direct'])} / {_f(nc['split'])} | "
            f"{_f(row['non_compute_ratio_ensemble_split'], 3)} "
            f"({_f(row['non_compute_ratio_direct_split'], 3)}) |")
    lines += ["", "Gateway overhead by part (means, ms): client-measured latency minus the "
              "view's own `timing_ms.total` (HTTP upload, gunicorn, middleware, audit write, "
              "response) / the view's work outside its Triton call (multipart parsing, "
              "parameter validation, header probe, authentication and throttling) / its Triton "
              "call minus the direct mode's latency (gRPC from a gateway worker vs from the "
              "client).", ""]
    for row in summary["per_concurrency"]:
        parts = row.get("gateway_overhead_parts_mean_ms")
        if parts:
            lines.append(f"- c={row['concurrency']}: total {_f(row['gateway_overhead_mean_ms'])} ="
                         f" {_f(parts['http_gunicorn_middleware_ms'])} + "
                         f"{_f(parts['view_work_ms'])} + {_f(parts['grpc_call_minus_direct_ms'])};"
                         f" paired p50 (latency − the gateway's Triton call, same request): "
                         f"{_f(row['gateway_overhead_paired_p50_ms'])}")
    lines += ["", "## Targets", "", "| target | goal | measured | met |", "| --- | --- | ---: | --- |"]
    for t in summary["targets"]:
        value = t["measured"]
        shown = _f(value, 4 if t["key"] == "bytes_ratio" else 3 if "ratio" in t["key"] else 1)
        lines.append(f"| {t['target']} | {t['goal']} | {shown} | "
                     f"{'–' if t['met'] is None else 'yes' if t['met'] else '**no**'} |")

    gpu = summary["gpu_projection"]
    lines += ["", "## With the model at GPU speed (concurrency 1)", "",
              f"craft + refinenet compute replaced by a stated **{gpu['gpu_model_ms']:g} ms** "
              f"per image (`--gpu-model-ms`; not measured here); the last column adds the "
              f"measured wire bytes at {gpu['network_gbps']:g} Gbit/s for an API and a Triton "
              f"on different hosts.", "",
              "| mode | measured mean ms | craft+refinenet compute ms | projected ms | "
              "+ network ms | projected with network ms |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for mode, row in gpu["modes"].items():
        lines.append(f"| {mode} | {_f(row['measured_mean_ms'])} | {_f(row['model_compute_ms'])}"
                     f" | {_f(row['projected_ms'])} | {_f(row['network_ms'])} | "
                     f"{_f(row['projected_with_network_ms'])} |")
    lines += ["", f"Latency ratio ensemble ÷ split: measured "
              f"{_f(gpu['latency_ratio_ensemble_split_measured'], 3)}, at GPU speed "
              f"{_f(gpu['latency_ratio_ensemble_split_projected'], 3)}, at GPU speed across "
              f"a {gpu['network_gbps']:g} Gbit/s network "
              f"{_f(gpu['latency_ratio_ensemble_split_projected_with_network'], 3)}."]

    lines += ["", "## Ensemble time by step (Triton statistics, mean ms per image)", "",
              "| c | step | queue | compute input | compute infer | compute output | total |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in summary["ensemble_steps"]:
        for step in row["steps"]:
            mark = " **(slowest)**" if step["model"] == row["slowest_step"] else ""
            lines.append(f"| {row['concurrency']} | {step['model']}{mark} | {_f(step['queue'])} |"
                         f" {_f(step['compute_input'])} | {_f(step['compute_infer'])} | "
                         f"{_f(step['compute_output'])} | {_f(step['total_ms'])} |")
        lines.append(f"| {row['concurrency']} | *{ENSEMBLE} request (Triton) / client "
                     f"latency* | | | | | {_f(row['ensemble_request_ms'])} / "
                     f"{_f(row['client_latency_mean_ms'])} |")

    split_rows = split_breakdown(results)
    if split_rows:
        lines += ["", "## Split time by step (mean ms per image)", "",
                  "Client = the API process; craft and refinenet stages from Triton's "
                  "statistics (compute input/output: copying the tensors into and out of the "
                  "Python-backend stub); the remainder is protobuf (de)serialisation, the gRPC "
                  "transfers and numpy copies in the client.", "",
                  "| c | client preprocess | craft queue / in / infer / out | refinenet queue / "
                  "in / infer / out | client postprocess | remainder | latency |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for row in split_rows:
            stages = lambda m: " / ".join(_f(row[m].get(f"{k}_ms"), 0) for k in (  # noqa: E731
                "queue", "compute_input", "compute_infer", "compute_output"))
            lines.append(f"| {row['concurrency']} | {_f(row['client_preprocess_ms'])} | "
                         f"{stages('craft')} | {stages('refinenet')} | "
                         f"{_f(row['client_postprocess_ms'])} | {_f(row['remainder_ms'])} | "
                         f"{_f(row['latency_mean_ms'])} |")

    lines += ["", "## Peak memory", "",
              "Per mode, the peak of each process group's summed RSS (and PSS, which splits "
              "shared pages between the processes that map them) while that mode ran.", "",
              "| mode | processes | total peak RSS | total peak PSS |", "| --- | --- | ---: | ---: |"]
    for mode, total in summary["memory"].items():
        lines.append(f"| {mode} | {' + '.join(total['groups'])} | {_mb(total['rss_bytes'])} | "
                     f"{_mb(total['pss_bytes'])} |")
    lines += ["", f"Ensemble ÷ in-process: RSS {_f(summary['memory_ratio_rss'], 3)}, "
              f"PSS {_f(summary['memory_ratio_pss'], 3)}.", "",
              "| mode | group | process | count | peak RSS (largest) | peak PSS (largest) |",
              "| --- | --- | --- | ---: | ---: | ---: |"]
    for mode, data in results["modes"].items():
        for group, info in (data.get("memory") or {}).items():
            roles: dict[str, list] = {}
            for proc in info["processes"]:
                roles.setdefault(proc["role"], []).append(proc)
            for role, procs in sorted(roles.items()):
                lines.append(f"| {mode} | {group} | {role} | {len(procs)} | "
                             f"{_mb(max(p['peak_rss_bytes'] for p in procs))} | "
                             f"{_mb(max(p['peak_pss_bytes'] for p in procs))} |")
    agreement = results.get("box_agreement")
    if agreement:
        lines += ["", "## Same answers", "", agreement["summary"]]
    lines += ["", "Method: `bench/README.md`. Raw data: the JSON file beside this one.", ""]
    return "\n".join(lines)
