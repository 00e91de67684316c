"""Detection quality (ocr_pipeline.evaluation): polygons, IoU, matching, the ICDAR 2015 rule,
the mmocr ground truth, on hand-made polygons and the shared sample."""

import json

import pytest

from ocr_pipeline.evaluation import (
    DetectionScore, iou, load_mmocr_textdet, match, polygon, score_image)
from tests.helpers import DATA, reference_boxes

GT = DATA / "icdar2015_gt.json"


def square(x, y, side=10):
    """A flat ICDAR polygon: the axis-aligned square with top-left (x, y), clockwise."""
    return [x, y, x + side, y, x + side, y + side, x, y + side]


# --- polygons and IoU ---------------------------------------------------------------------

def test_iou_of_known_squares():
    assert iou(polygon(square(0, 0)), polygon(square(0, 0))) == pytest.approx(1.0)
    # Shifted by half a side: intersection 50, union 150.
    assert iou(polygon(square(0, 0)), polygon(square(5, 0))) == pytest.approx(1 / 3)
    # Shifted by half a side both ways: intersection 25, union 175.
    assert iou(polygon(square(0, 0)), polygon(square(5, 5))) == pytest.approx(25 / 175)
    assert iou(polygon(square(0, 0)), polygon(square(20, 0))) == 0.0


def test_polygon_takes_flat_and_point_lists_alike():
    flat = polygon([0, 0, 4, 0, 4, 2, 0, 2])
    points = polygon([[0, 0], [4, 0], [4, 2], [0, 2]])
    assert flat.area == points.area == 8.0
    assert iou(flat, points) == pytest.approx(1.0)


def test_self_intersecting_polygon_is_repaired_not_rejected():
    bow_tie = polygon([0, 0, 10, 10, 10, 0, 0, 10])  # corners in the wrong order
    assert bow_tie.is_valid
    # buffer(0), as mmocr's poly_make_valid does: one lobe of the bow tie survives.
    assert bow_tie.area == pytest.approx(25.0)


# --- matching -----------------------------------------------------------------------------

def test_matching_is_one_to_one_and_takes_the_best_pair_first():
    truths = [polygon(square(0, 0)), polygon(square(3, 0))]   # overlapping words
    detections = [polygon(square(2, 0))]                       # IoU 0.67 and 0.82
    assert match(detections, truths, 0.5) == [(0, 1)]
    # Two detections of the same word: only one may match it.
    assert match([polygon(square(0, 0)), polygon(square(1, 0))],
                 [polygon(square(0, 0))], 0.5) == [(0, 0)]


def test_matching_greedy_order_gives_each_detection_its_best_free_word():
    truths = [polygon(square(0, 0)), polygon(square(4, 0))]
    detections = [polygon(square(1, 0)), polygon(square(4, 0))]
    # d1 = t1 exactly (IoU 1.0) is taken first; d0 then gets t0 (IoU 0.82).
    assert sorted(match(detections, truths, 0.5)) == [(0, 0), (1, 1)]


def test_iou_threshold_is_inclusive():
    half = [0, 0, 10, 0, 10, 5, 0, 5]  # IoU with square(0, 0) is exactly 0.5
    assert match([polygon(half)], [polygon(square(0, 0))], 0.5) == [(0, 0)]
    assert match([polygon(half)], [polygon(square(0, 0))], 0.51) == []


# --- the ICDAR rule -----------------------------------------------------------------------

def test_detection_mostly_inside_dont_care_is_dropped():
    score = score_image(detections=[square(100, 100), square(0, 0)],
                        truths=[square(0, 0)], dont_care=[square(98, 98, side=20)])
    assert score == DetectionScore(matched=1, detections=1, truths=1)
    assert score.precision == score.recall == score.hmean == 1.0


def test_detection_half_inside_dont_care_is_kept():
    # Exactly 50 % of its area inside the region: the rule drops only "more than half".
    score = score_image(detections=[square(5, 0)], truths=[],
                        dont_care=[square(0, 0)])
    assert score == DetectionScore(matched=0, detections=1, truths=0)
    assert score.precision == 0.0 and score.recall == 1.0 and score.hmean == 0.0


def test_dont_care_words_count_for_neither_side():
    score = score_image(detections=[], truths=[], dont_care=[square(0, 0)])
    assert score == DetectionScore(0, 0, 0)
    assert score.precision == score.recall == score.hmean == 1.0


def test_unmatched_detections_and_missed_words_lower_precision_and_recall():
    score = score_image(detections=[square(0, 0), square(50, 50), square(80, 0)],
                        truths=[square(0, 0), square(200, 200)], dont_care=[])
    assert score == DetectionScore(matched=1, detections=3, truths=2)
    assert score.precision == pytest.approx(1 / 3)
    assert score.recall == pytest.approx(1 / 2)
    assert score.hmean == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))


def test_totals_are_summed_counts_not_averaged_rates():
    total = DetectionScore()
    total.add(DetectionScore(matched=1, detections=1, truths=1))
    total.add(DetectionScore(matched=0, detections=3, truths=1))
    assert total == DetectionScore(matched=1, detections=4, truths=2)
    assert total.precision == 0.25 and total.recall == 0.5


# --- ground truth -------------------------------------------------------------------------

def test_mmocr_ground_truth_is_read_with_its_dont_care_regions():
    truth = {g.image: g for g in load_mmocr_textdet(GT)}
    assert sorted(truth) == [f"img_{i}.jpg" for i in range(1, 6)]
    assert {name: (len(g.truths), len(g.dont_care)) for name, g in truth.items()} == {
        "img_1.jpg": (4, 3), "img_2.jpg": (2, 0), "img_3.jpg": (2, 11),
        "img_4.jpg": (0, 3), "img_5.jpg": (0, 2)}
    assert truth["img_2.jpg"].truths[0] == [602, 173, 635, 175, 634, 197, 602, 196]
    assert (truth["img_2.jpg"].width, truth["img_2.jpg"].height) == (1280, 720)


def test_malformed_ground_truth_is_refused(tmp_path):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps({"annotations": []}))
    with pytest.raises(ValueError, match="data_list"):
        load_mmocr_textdet(path)
    path.write_text(json.dumps({"data_list": [{"instances": []}]}))  # no img_path
    with pytest.raises(ValueError, match="malformed"):
        load_mmocr_textdet(path)


def test_reference_pipeline_boxes_score_the_published_hmean():
    """The reference CRAFT run's own boxes score H-mean 0.875 on the sample (7 of 8)."""
    reference = reference_boxes(1280)
    total = DetectionScore()
    for entry in load_mmocr_textdet(GT):
        total.add(score_image(reference[entry.image]["boxes"], entry.truths, entry.dont_care))
    assert total == DetectionScore(matched=7, detections=8, truths=8)
    assert total.hmean == pytest.approx(0.875)
