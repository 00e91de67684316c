"""Unit tests of the CRAFT box extraction (ocr_pipeline.boxes) on synthetic score maps."""

import numpy as np
import pytest

from ocr_pipeline import boxes


def maps(height=60, width=100):
    return np.zeros((height, width), np.float32), np.zeros((height, width), np.float32)


def detect(region, link, text=0.7, link_threshold=0.4, low=0.4):
    return boxes.detect_boxes(region, link, text, link_threshold, low)


def test_one_word_gives_its_dilated_rectangle():
    region, link = maps()
    region[10:20, 20:60] = 0.9  # 40 x 10 pixels, area 400
    found, scores = detect(region, link)
    # niter = int(sqrt(400 * 10 / (40 * 10)) * 2) = 6: a 7x7 dilation grows 3 px per side.
    np.testing.assert_allclose(found[0], [[17, 7], [62, 7], [62, 22], [17, 22]], atol=1e-3)
    assert found.shape == (1, 4, 2) and found.dtype == np.float32
    assert scores.tolist() == pytest.approx([0.9])


def test_low_peak_and_tiny_components_are_dropped():
    region, link = maps()
    region[5:15, 5:30] = 0.6      # above low_text but its peak is under text_threshold
    region[40:43, 40:43] = 0.95   # 9 pixels < MIN_COMPONENT_AREA
    region[30:38, 60:90] = 0.8
    found, scores = detect(region, link)
    assert len(found) == 1
    assert scores.tolist() == pytest.approx([0.8])


def test_link_score_joins_characters_into_one_word():
    region, link = maps()
    region[10:20, 10:20] = 0.9
    region[10:20, 30:40] = 0.9
    separate, _ = detect(region, link)
    link[12:18, 20:30] = 0.8
    joined, _ = detect(region, link)
    assert len(separate) == 2
    assert len(joined) == 1
    assert joined[0][:, 0].min() < 10 and joined[0][:, 0].max() > 40


def test_thresholds_are_strict_greater_than():
    region, link = maps()
    region[10:20, 10:50] = 0.4   # equal to low_text: not text
    assert len(detect(region, link)[0]) == 0


def test_rotated_word_is_clockwise_from_top_left():
    region, link = maps(100, 100)
    for i in range(60):            # a 45-degree diagonal stroke, 5 px thick
        region[20 + i // 2: 25 + i // 2, 20 + i] = 0.9
    found, _ = detect(region, link)
    box = found[0]
    assert len(found) == 1
    assert int(box.sum(axis=1).argmin()) == 0            # starts at the top-left-most corner
    edge1, edge2 = box[1] - box[0], box[2] - box[1]
    assert edge1[0] * edge2[1] - edge1[1] * edge2[0] > 0  # clockwise in image coordinates


def test_near_square_component_uses_axis_aligned_box():
    region, link = maps()
    region[10:30, 10:30] = 0.9
    found, _ = detect(region, link)
    # niter = int(sqrt(400 * 20 / 400) * 2) = 8: a 9x9 dilation grows 4 px per side; the box
    # is the pixel extent (no half-pixel rectangle), exactly on pixel coordinates.
    np.testing.assert_array_equal(found[0], [[6, 6], [33, 6], [33, 33], [6, 33]])


def test_no_text_gives_empty_typed_arrays():
    found, scores = detect(*maps())
    assert found.shape == (0, 4, 2) and found.dtype == np.float32
    assert scores.shape == (0,) and scores.dtype == np.float32


def test_scores_never_exceed_one():
    region, link = maps()
    region[10:20, 10:50] = 1.015   # BF16 engines overshoot slightly
    assert detect(region, link)[1].tolist() == [1.0]


def test_to_image_coordinates_scales_by_two_over_ratio_and_clips():
    found = np.array([[[10, 5], [60, 5], [60, 20], [10, 20]]], np.float32)
    mapped = boxes.to_image_coordinates(found, ratio=0.5, width=200, height=70)
    np.testing.assert_allclose(mapped[0], [[40, 20], [200, 20], [200, 70], [40, 70]])
    assert mapped.dtype == np.float32
