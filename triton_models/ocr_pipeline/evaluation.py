"""Detection quality: polygon IoU, one-to-one matching, ICDAR 2015 precision/recall/H-mean.

The ICDAR 2015 Incidental Scene Text protocol (Karatzas et al., ICDAR 2015; the RRC's
``script.py`` for task 4.1): a detection matches a ground-truth word when their polygon IoU is
at least 0.5, each side matched at most once; detections lying mostly
(> 50 % of their area) inside a "do not care" region are dropped before matching; don't-care
words count neither for recall nor for precision. H-mean is the harmonic mean of precision and
recall; dataset figures come from the summed counts of all images, not from averaged rates.
Matching here is greedy from the highest IoU down. Polygons are handled by Shapely.
:func:`load_mmocr_textdet` reads ground truth in the mmocr text-detection format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from shapely.geometry import Polygon

from .rates import f_score, precision, recall


def polygon(points) -> Polygon:
    """A valid Shapely polygon from ``[[x, y], ...]`` or a flat ``[x0, y0, x1, y1, ...]``."""
    flat = [float(v) for point in points for v in (point if hasattr(point, "__len__") else [point])]
    shape = Polygon(list(zip(flat[0::2], flat[1::2])))
    return shape if shape.is_valid else shape.buffer(0)


def iou(a: Polygon, b: Polygon) -> float:
    """Intersection over union of two polygons (0 when both are empty)."""
    union = a.union(b).area
    return a.intersection(b).area / union if union > 0 else 0.0


def match(detections: list[Polygon], truths: list[Polygon], threshold: float,
          allowed=None) -> list[tuple[int, int]]:
    """One-to-one pairs ``(detection index, truth index)`` with IoU above ``threshold``.

    Pairs are taken greedily from the highest IoU down, so each polygon is used at most once;
    ``allowed(i, j)``, if given, says which pairs may be made at all (e.g. the same text).
    """
    candidates = sorted(
        ((iou(d, t), i, j) for i, d in enumerate(detections) for j, t in enumerate(truths)
         if allowed is None or allowed(i, j)),
        reverse=True)
    used_d, used_t, pairs = set(), set(), []
    for value, i, j in candidates:
        if value < threshold:
            break
        if i not in used_d and j not in used_t:
            used_d.add(i)
            used_t.add(j)
            pairs.append((i, j))
    return pairs


#: IoU at which two box sets count as the same detection (box parity): far stricter than the
#: ICDAR protocol's 0.5, so that a box that grew or shrank by a character does not pass.
PARITY_IOU = 0.8


def parity_f(found: list, expected: list, threshold: float = PARITY_IOU) -> float:
    """Box parity: the F-score of matching ``found`` boxes one-to-one with ``expected`` ones at
    IoU >= ``threshold`` (each box ``[[x, y], ...]`` in the same pixel frame)."""
    pairs = match([polygon(b) for b in found], [polygon(b) for b in expected], threshold)
    return f_score(len(pairs), len(found), len(expected))


@dataclass
class DetectionScore:
    """Counts and rates of an ICDAR-style evaluation (rates are 0..1).

    Attributes:
        matched: detections matched one-to-one with a ground-truth word.
        detections: detections that count (those mostly inside a don't-care region dropped).
        truths: ground-truth words that count (don't-care regions excluded).
    """

    matched: int = 0
    detections: int = 0
    truths: int = 0

    @property
    def precision(self) -> float:
        """matched / detections (1.0 when there is nothing to find and nothing found)."""
        return precision(self.matched, self.detections, self.truths)

    @property
    def recall(self) -> float:
        """matched / truths (1.0 when there is nothing to find)."""
        return recall(self.matched, self.truths)

    @property
    def hmean(self) -> float:
        """H-mean: the harmonic mean of precision and recall."""
        return f_score(self.matched, self.detections, self.truths)

    def add(self, other: "DetectionScore") -> None:
        """Accumulate another image's counts (dataset totals are summed counts)."""
        self.matched += other.matched
        self.detections += other.detections
        self.truths += other.truths


def score_image(detections: list, truths: list, dont_care: list,
                iou_threshold: float = 0.5, dont_care_overlap: float = 0.5) -> DetectionScore:
    """Score one image's detections against its ground truth (ICDAR 2015 rule).

    Args:
        detections: detected polygons (each ``[[x, y], ...]``).
        truths: ground-truth word polygons that count.
        dont_care: "do not care" polygons.
        iou_threshold: a pair must have at least this IoU to match.
        dont_care_overlap: a detection whose area lies more than this fraction inside a
            don't-care region is dropped.
    """
    dets = [polygon(d) for d in detections]
    cares = [polygon(t) for t in truths]
    ignored = [polygon(t) for t in dont_care]
    kept = [d for d in dets if not any(
        d.area > 0 and d.intersection(g).area / d.area > dont_care_overlap for g in ignored)]
    pairs = match(kept, cares, iou_threshold)
    return DetectionScore(matched=len(pairs), detections=len(kept), truths=len(cares))


@dataclass(frozen=True)
class GroundTruthImage:
    """One image's ground truth in pixels of the original (upright) image.

    Attributes:
        image: the image's path as written in the ground truth (``img_path``).
        truths: word polygons that count, each a flat ``[x0, y0, x1, y1, ...]``.
        dont_care: "do not care" polygons (illegible or ``###`` words, ``ignore: true``).
        width, height: image size in pixels, when the ground truth gives it (else 0).
    """

    image: str
    truths: list = field(default_factory=list)
    dont_care: list = field(default_factory=list)
    width: int = 0
    height: int = 0


def load_mmocr_textdet(path) -> list[GroundTruthImage]:
    """Read a ground-truth file in the mmocr text-detection format (``TextDetDataset``).

    The file is ``{"metainfo": {...}, "data_list": [{"img_path": ..., "height": ...,
    "width": ..., "instances": [{"polygon": [x0, y0, ...], "ignore": bool}, ...]}]}``;
    polygons are flat lists of pixel coordinates; ``ignore`` marks a don't-care region.

    Raises:
        ValueError: the file is not in that format.
    """
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or not isinstance(data.get("data_list"), list):
        raise ValueError(f"{path}: not an mmocr textdet file (no data_list)")
    images = []
    for entry in data["data_list"]:
        try:
            instances = entry.get("instances", [])
            images.append(GroundTruthImage(
                image=entry["img_path"],
                truths=[list(i["polygon"]) for i in instances if not i.get("ignore", False)],
                dont_care=[list(i["polygon"]) for i in instances if i.get("ignore", False)],
                width=int(entry.get("width", 0)), height=int(entry.get("height", 0))))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: malformed data_list entry: {exc}") from exc
    return images
