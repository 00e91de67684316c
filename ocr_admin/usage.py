"""Usage of the OCR API from the audit log, for the admin's usage page (``/admin/usage/``) and
its JSON (``/admin/usage.json``): requests per day per key, error rate by code, p50/p95
latency.

Counting is done by the database (``GROUP BY`` key per day, code over the window), each day's
rows read through the ``created`` index. Percentiles are nearest-rank values picked by the
database with ``ORDER BY total_ms LIMIT 1 OFFSET k``: portable SQL (SQLite has no percentile
function) that never brings the rows to Python. 300,000 rows over 30 days: about 2 s on SQLite
for the 30-day page, 0.35 s for 7 days. Days are calendar days of the current time zone
(``TIME_ZONE``, UTC by default).
"""

from __future__ import annotations

import datetime as dt
import math

from django.db.models import Count, F, Q
from django.http import JsonResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from . import charts
from ocr_contract.errors import ERROR_CODES
from ocr_api.models import ApiKey, OcrRequest

DEFAULT_DAYS = 14
MAX_DAYS = 90
#: Windows offered as links on the page (any 1…MAX_DAYS works in the query string).
WINDOW_CHOICES = (7, 14, 30, 90)
#: Keys drawn as their own series; the less busy ones are summed into one "other keys" series.
MAX_KEY_SERIES = 8
PERCENTILES = (50, 95)
NO_KEY_LABEL = "no key (staff session, or refused before a key was read)"
OTHER_KEYS_LABEL = "other keys"


def window_days(value) -> int:
    """The ``days`` query parameter as a window length: 1…``MAX_DAYS``, else the default."""
    try:
        days = int(value)
    except (TypeError, ValueError):
        return DEFAULT_DAYS
    return min(MAX_DAYS, max(1, days))


def nearest_rank(count: int, percentile: float) -> int:
    """1-based rank of the nearest-rank ``percentile`` among ``count`` sorted values."""
    return min(count, max(1, math.ceil(percentile / 100.0 * count)))


def percentiles(queryset, field: str, wanted=PERCENTILES, count: int | None = None) -> dict:
    """Nearest-rank percentiles of ``field`` over ``queryset``, null values left out.

    Each percentile is one ``ORDER BY field LIMIT 1 OFFSET rank-1`` query.

    Args:
        queryset: the rows.
        field: a numeric field.
        wanted: percentiles in (0, 100].
        count: the number of non-null values, if already known (saves a COUNT query).

    Returns:
        ``{"count": n, "p50": value, "p95": value}``; values are ``None`` when ``n == 0``.
    """
    values = (queryset.filter(**{f"{field}__isnull": False})
              .order_by(field).values_list(field, flat=True))
    if count is None:
        count = values.count()
    result: dict = {"count": count}
    for p in wanted:
        result[f"p{p:g}"] = (round(values[nearest_rank(count, p) - 1], 1) if count else None)
    return result


def _day_start(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def _key_label(key: dict) -> str:
    label = f"{key['name']} ({key['prefix']})"
    return f"{label}, revoked" if key["revoked"] else label


def _answered(queryset):
    """Rows answered with boxes (HTTP 200): the latency samples.

    ``http_status + 0`` is the same test, but no index can serve it: without statistics SQLite
    would otherwise pick the ``http_status`` index (matching nearly every row) over the
    ``created`` range, ten times slower.
    """
    return queryset.alias(status_value=F("http_status") + 0).filter(status_value=200)


def summarize(days: int = DEFAULT_DAYS, now: dt.datetime | None = None) -> dict:
    """Usage over the last ``days`` calendar days, today included (JSON-ready).

    Per day, one ``GROUP BY api_key`` query and two percentile queries read that day's rows
    through the ``created`` index; the codes and the window's percentiles take three more.

    Returns:
        ``dates`` (ISO, oldest first) and, per date where it says ``per_day``:
        ``requests`` — ``total``, ``per_day``, ``per_key`` (series: ``key_prefix``,
        ``key_name``, ``label``, ``counts`` per date, ``total``; busiest first; keyless requests
        with ``key_prefix`` None). A key is shown by its prefix and name only, never its id:
        djangorestframework-api-key's id is the prefix and the key's hash, and staff who may
        not see keys see this page too;
        ``errors`` — HTTP status ≥ 400: ``total``, ``rate``, ``per_day``, ``by_code``
        (``code``, ``status``, ``count``, ``rate`` of all requests; most frequent first);
        ``latency_ms`` — ``total_ms`` of answered requests (HTTP 200): ``count``, ``p50``,
        ``p95`` over the window, and ``per_day`` (``date``, ``count``, ``p50``, ``p95``).
    """
    today = timezone.localdate(now or timezone.now())
    first = today - dt.timedelta(days=days - 1)
    dates = [first + dt.timedelta(days=i) for i in range(days)]

    per_key: dict[int | None, list[int]] = {}
    per_day = {"requests": [0] * days, "errors": [0] * days, "answered": [0] * days}
    latency_per_day = []
    for i, day in enumerate(dates):
        day_rows = OcrRequest.objects.filter(
            created__gte=_day_start(day), created__lt=_day_start(day + dt.timedelta(days=1)))
        for row in day_rows.values("api_key").annotate(
                n=Count("id"), errors=Count("id", filter=Q(http_status__gte=400)),
                answered=Count("id", filter=Q(http_status=200, total_ms__isnull=False))
        ).order_by():
            per_key.setdefault(row["api_key"], [0] * days)[i] += row["n"]
            per_day["requests"][i] += row["n"]
            per_day["errors"][i] += row["errors"]
            per_day["answered"][i] += row["answered"]
        latency_per_day.append({"date": day.isoformat(), **percentiles(
            _answered(day_rows), "total_ms", count=per_day["answered"][i])})

    keys = {k["pk"]: k for k in ApiKey.objects.filter(pk__in=[k for k in per_key if k])
            .values("pk", "name", "prefix", "revoked")}
    series = [{"key_prefix": keys[key_id]["prefix"] if key_id in keys else None,
               "key_name": keys[key_id]["name"] if key_id in keys else None,
               "label": _key_label(keys[key_id]) if key_id in keys else NO_KEY_LABEL,
               "counts": counts, "total": sum(counts)}
              for key_id, counts in per_key.items()]
    series.sort(key=lambda s: (-s["total"], s["label"]))
    total, error_total = sum(per_day["requests"]), sum(per_day["errors"])

    rows = OcrRequest.objects.filter(created__gte=_day_start(first),
                                     created__lt=_day_start(today + dt.timedelta(days=1)))
    by_code = [{"code": row["error_code"], "status": ERROR_CODES.get(row["error_code"]),
                "count": row["n"], "rate": round(row["n"] / total, 4)}
               for row in rows.filter(http_status__gte=400).values("error_code")
               .annotate(n=Count("id")).order_by("-n", "error_code")]

    return {
        "days": days,
        "timezone": timezone.get_current_timezone_name(),
        "dates": [day.isoformat() for day in dates],
        "requests": {"total": total, "per_day": per_day["requests"], "per_key": series},
        "errors": {"total": error_total,
                   "rate": round(error_total / total, 4) if total else 0.0,
                   "per_day": per_day["errors"], "by_code": by_code},
        "latency_ms": {**percentiles(_answered(rows), "total_ms",
                                     count=sum(per_day["answered"])),
                       "per_day": latency_per_day},
    }


def _chart_series(per_key: list[dict]) -> list[dict]:
    """Per-key series with colours; keys past ``MAX_KEY_SERIES`` summed into one series."""
    keyed = [s for s in per_key if s["key_prefix"] is not None]
    keyless = [s for s in per_key if s["key_prefix"] is None]
    shown, rest = keyed[:MAX_KEY_SERIES], keyed[MAX_KEY_SERIES:]
    result = [{"label": s["label"], "color": charts.PALETTE[i % len(charts.PALETTE)],
               "values": s["counts"], "total": s["total"]} for i, s in enumerate(shown)]
    if rest:
        counts = [sum(values) for values in zip(*(s["counts"] for s in rest))]
        result.append({"label": f"{OTHER_KEYS_LABEL} ({len(rest)})", "color": "#C8CDD2",
                       "values": counts, "total": sum(counts)})
    for s in keyless:
        result.append({"label": s["label"], "color": charts.NEUTRAL, "values": s["counts"],
                       "total": s["total"]})
    return result


def usage_page(request, admin_context: dict) -> TemplateResponse:
    """The admin's usage page: three SVG charts and their numbers (staff only, via the site)."""
    days = window_days(request.GET.get("days"))
    summary = summarize(days)
    short = [date[5:] for date in summary["dates"]]  # MM-DD under the bars
    series = _chart_series(summary["requests"]["per_key"])
    latency = summary["latency_ms"]
    context = {
        **admin_context,
        "title": "API usage",
        "summary": summary,
        "days": days,
        "error_percent": f"{summary['errors']['rate'] * 100:.1f}",
        "window_choices": WINDOW_CHOICES,
        "series": series,
        "requests_chart": charts.stacked_bar_chart(
            short, series, "Requests per day per API key", category_titles=summary["dates"]),
        "errors_chart": charts.horizontal_bar_chart(
            [{"label": row["code"] or "(no code)", "value": row["rate"],
              "note": f"({row['count']})"} for row in summary["errors"]["by_code"]],
            "Share of requests per error code"),
        "latency_chart": charts.line_chart(
            short, [{"label": "p50", "color": charts.PALETTE[0],
                     "values": [d["p50"] for d in latency["per_day"]]},
                    {"label": "p95", "color": charts.PALETTE[5],
                     "values": [d["p95"] for d in latency["per_day"]]}],
            "p50 and p95 latency per day", unit=" ms", category_titles=summary["dates"]),
        # One table row per day: (latency entry with the date, requests, errors).
        "day_rows": list(zip(latency["per_day"], summary["requests"]["per_day"],
                             summary["errors"]["per_day"])),
    }
    return TemplateResponse(request, "admin/ocr_admin/usage.html", context)


def usage_json(request) -> JsonResponse:
    """:func:`summarize` as JSON, window from ``?days=`` (staff only, via the admin site)."""
    return JsonResponse(summarize(window_days(request.GET.get("days"))))
