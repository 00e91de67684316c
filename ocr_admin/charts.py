"""Small server-side SVG charts for the admin's usage page (no chart library, no JavaScript).

Each function returns an ``<svg>`` element as a safe string, sized by its ``viewBox`` so it
scales with the page. Every label is HTML-escaped; every bar and point carries a ``<title>``
(a tooltip with the exact number) and ``data-*`` attributes with the values it draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

#: Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#332288")
NEUTRAL = "#9AA1A8"

_WIDTH = 760
_FONT = 'font-family="system-ui, sans-serif" font-size="11" fill="#444"'


def nice_ticks(maximum: float, count: int = 5, integer: bool = False) -> list[float]:
    """Round axis ticks from 0 to at least ``maximum``: steps of 1, 2 or 5 times a power of 10
    (whole steps only with ``integer``, for counts).

    >>> nice_ticks(37)
    [0, 10, 20, 30, 40]
    """
    if maximum <= 0:
        return [0, 1]
    raw = maximum / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1, step)
    top = math.ceil(maximum / step - 1e-9) * step
    ticks, value = [], 0.0
    while value <= top + step / 2:
        ticks.append(int(value) if float(value).is_integer() else round(value, 6))
        value += step
    return ticks


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def _svg(height: int, label: str, body: list[str], css_class: str) -> SafeString:
    return mark_safe(
        f'<svg class="chart {css_class}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>")


def _y_axis(ticks: list[float], left: int, right: int, top: int, bottom: int,
            unit: str = "") -> list[str]:
    """Horizontal grid lines with their labels."""
    parts = []
    span = ticks[-1] or 1
    for tick in ticks:
        y = bottom - (bottom - top) * tick / span
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#e3e6e9" stroke-width="1"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" {_FONT}>'
                     f"{escape(_number(tick))}{escape(unit)}</text>")
    return parts


def _x_labels(labels: Sequence[str], left: int, slot: float, y: int) -> list[str]:
    """Category labels under the plot; thinned out so that at most ~12 are written."""
    every = max(1, math.ceil(len(labels) / 12))
    return [f'<text x="{left + slot * (i + 0.5):.1f}" y="{y}" text-anchor="middle" {_FONT}>'
            f"{escape(label)}</text>"
            for i, label in enumerate(labels) if i % every == 0 or i == len(labels) - 1]


def stacked_bar_chart(categories: Sequence[str], series: Sequence[dict], label: str,
                      category_titles: Sequence[str] | None = None) -> SafeString:
    """Vertical bars per category, one stacked segment per series.

    Args:
        categories: short x-axis labels (e.g. ``"03-14"``).
        series: ``{"label": str, "color": str, "values": [number per category]}``.
        label: accessible name of the chart.
        category_titles: long category names for tooltips (defaults to ``categories``).
    """
    titles = category_titles or categories
    height, left, right, top, bottom = 260, 48, _WIDTH - 12, 12, 228
    totals = [sum(s["values"][i] for s in series) for i in range(len(categories))]
    ticks = nice_ticks(max(totals, default=0), integer=True)
    scale = (bottom - top) / (ticks[-1] or 1)
    slot = (right - left) / max(1, len(categories))
    bar = max(2.0, slot * 0.7)
    parts = _y_axis(ticks, left, right, top, bottom)
    for i, title in enumerate(titles):
        x = left + slot * i + (slot - bar) / 2
        y = float(bottom)
        for s in series:
            value = s["values"][i]
            if not value:
                continue
            h = value * scale
            y -= h
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{escape(s["color"])}" data-category="{escape(title)}" '
                f'data-series="{escape(s["label"])}" data-value="{value}">'
                f'<title>{escape(title)} · {escape(s["label"])}: {value}</title></rect>')
    parts.append(f'<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#888"/>')
    parts += _x_labels(categories, left, slot, bottom + 16)
    return _svg(height, label, parts, "stacked-bars")


def horizontal_bar_chart(rows: Sequence[dict], label: str, maximum: float | None = None,
                         value_format: str = "{:.1%}") -> SafeString:
    """One horizontal bar per row, longest first as given.

    Args:
        rows: ``{"label": str, "value": number, "note": str}``; ``note`` is written after the
            formatted value (e.g. the count behind a rate).
        label: accessible name of the chart.
        maximum: the value of a full-width bar (defaults to the largest value).
        value_format: format of the value written at the end of each bar.
    """
    row_height, left, right, top = 26, 190, _WIDTH - 130, 8
    height = top * 2 + row_height * max(1, len(rows))
    full = maximum or max((r["value"] for r in rows), default=0) or 1
    parts = []
    for i, row in enumerate(rows):
        y = top + row_height * i
        width = max(1.0, (right - left) * row["value"] / full)
        parts.append(f'<text x="{left - 8}" y="{y + 17}" text-anchor="end" {_FONT}>'
                     f'{escape(row["label"])}</text>')
        parts.append(
            f'<rect class="bar" x="{left}" y="{y + 4}" width="{width:.1f}" '
            f'height="{row_height - 8}" fill="{PALETTE[5]}" data-category="{escape(row["label"])}" '
            f'data-value="{row["value"]}"><title>{escape(row["label"])}: '
            f'{escape(value_format.format(row["value"]))} {escape(row.get("note", ""))}</title>'
            f"</rect>")
        parts.append(f'<text x="{left + width + 6:.1f}" y="{y + 17}" {_FONT}>'
                     f'{escape(value_format.format(row["value"]))} {escape(row.get("note", ""))}'
                     f"</text>")
    return _svg(height, label, parts, "horizontal-bars")


def line_chart(categories: Sequence[str], series: Sequence[dict], label: str, unit: str = "",
               category_titles: Sequence[str] | None = None) -> SafeString:
    """Lines over categories, with a dot per value; ``None`` values leave a gap.

    Args:
        categories: short x-axis labels.
        series: ``{"label": str, "color": str, "values": [number or None per category]}``.
        label: accessible name of the chart.
        unit: written after the y-axis labels (e.g. ``" ms"``).
        category_titles: long category names for tooltips (defaults to ``categories``).
    """
    titles = category_titles or categories
    height, left, right, top, bottom = 260, 64, _WIDTH - 12, 12, 228
    values = [v for s in series for v in s["values"] if v is not None]
    ticks = nice_ticks(max(values, default=0))
    scale = (bottom - top) / (ticks[-1] or 1)
    slot = (right - left) / max(1, len(categories))
    parts = _y_axis(ticks, left, right, top, bottom, unit)
    for s in series:
        color = escape(s["color"])
        segment: list[str] = []
        segments = [segment]
        dots = []
        for i, value in enumerate(s["values"]):
            if value is None:
                segment = []
                segments.append(segment)
                continue
            x, y = left + slot * (i + 0.5), bottom - value * scale
            segment.append(f"{x:.1f},{y:.1f}")
            dots.append(
                f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}" '
                f'data-category="{escape(titles[i])}" data-series="{escape(s["label"])}" '
                f'data-value="{value}"><title>{escape(titles[i])} · {escape(s["label"])}: '
                f"{escape(_number(value))}{escape(unit)}</title></circle>")
        for points in segments:
            if len(points) > 1:
                parts.append(f'<polyline points="{" ".join(points)}" fill="none" '
                             f'stroke="{color}" stroke-width="2"/>')
        parts += dots
    parts.append(f'<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#888"/>')
    parts += _x_labels(categories, left, slot, bottom + 16)
    return _svg(height, label, parts, "lines")
