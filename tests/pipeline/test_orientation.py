"""Orientation geometry (ocr_pipeline.orientation) and its decision with a stand-in reader."""

import numpy as np
import pytest

from ocr_pipeline import orientation, reading_order
from ocr_pipeline.recognition import Reading


def rect(left, top, right, bottom):
    """An axis-aligned box, corners clockwise from the top-left (CRAFT's order)."""
    return np.array([[left, top], [right, top], [right, bottom], [left, bottom]], np.float32)


def turned(points, angle, width, height):
    """Points of an upright ``width x height`` page, after the page is turned ``angle``
    clockwise (what ``np.rot90(page, k=-angle // 90)`` does to the pixels)."""
    x, y = np.asarray(points, np.float32)[..., 0], np.asarray(points, np.float32)[..., 1]
    return np.stack({0: (x, y), 90: (height - y, x), 180: (width - x, height - y),
                     270: (y, width - x)}[angle], axis=-1)


def craft_order(box):
    """A box's corners as CRAFT gives them: clockwise, from the top-left-most (min x + y)."""
    start = int(np.argmin(box.sum(axis=1)))
    return np.roll(box, -start, axis=0)


@pytest.mark.parametrize("angle", orientation.ANGLES)
def test_upright_frame_round_trips_and_matches_numpy_rotation(angle):
    width, height = 40, 30
    page = np.zeros((height, width), np.uint8)
    page[5, 7] = 1                                       # pixel (x=7, y=5) of the upright page
    image = np.rot90(page, k=-angle // 90)
    y, x = np.argwhere(image)[0]
    # pixel centres: the point (7.5, 5.5) of the upright page is at (x+.5, y+.5) in the image
    np.testing.assert_allclose(turned([[7.5, 5.5]], angle, width, height), [[x + .5, y + .5]])
    h, w = image.shape
    np.testing.assert_allclose(orientation.to_upright([[x + .5, y + .5]], angle, w, h),
                               [[7.5, 5.5]], atol=1e-5)
    points = np.array([[1.0, 2.0], [30.0, 4.0]], np.float32)
    np.testing.assert_allclose(orientation.from_upright(
        orientation.to_upright(points, angle, w, h), angle, w, h), points, atol=1e-5)


@pytest.mark.parametrize("angle", orientation.ANGLES)
def test_corners_start_at_the_texts_own_top_left(angle):
    """A word of an upright page, turned: CRAFT lists its corners from the image's top-left;
    rolled by the angle, they are the upright word's corners again (its top-left first)."""
    width, height = 400, 300
    word = rect(100, 50, 220, 80)                            # 120 x 30, text left to right
    seen = craft_order(turned(word, angle, width, height))
    assert orientation.box_axis(seen) == angle % 180
    np.testing.assert_allclose(orientation.oriented(seen, angle),
                               turned(word, angle, width, height), atol=1e-4)


def test_axis_needs_an_elongated_box():
    assert orientation.box_axis(rect(0, 0, 100, 20)) == 0
    assert orientation.box_axis(rect(0, 0, 20, 100)) == 90
    assert orientation.box_axis(rect(0, 0, 26, 20)) is None
    assert orientation.elongation(rect(0, 0, 20, 100)) == pytest.approx(5.0)
    assert orientation.area(rect(0, 0, 20, 100)) == pytest.approx(2000.0)


def test_page_angle_is_the_area_weighted_vote():
    assert orientation.page_angle([180, 0, 0], [5000, 1000, 1000]) == 180
    assert orientation.page_angle([90, 270, 270], [3000, 1000, 1000]) == 90
    assert orientation.page_angle([0, 180], [1000, 1000]) == 0          # a tie stays upright
    assert orientation.page_angle([], []) == 0


@pytest.mark.parametrize("angle", orientation.ANGLES)
def test_reading_order_follows_the_text_not_the_pixel_rows(angle):
    width, height = 400, 300
    words = [rect(20, 20, 120, 50), rect(140, 20, 260, 50),       # line 1: two words
             rect(20, 60, 200, 90)]                                # line 2, same paragraph
    seen = np.stack([orientation.oriented(craft_order(turned(w, angle, width, height)), angle)
                     for w in words])
    w, h = (width, height) if angle % 180 == 0 else (height, width)
    lines, polygons, paragraphs = reading_order.layout(seen, angle, w, h)
    assert lines == [[0, 1], [2]]
    assert paragraphs == [0, 0]
    np.testing.assert_allclose(polygons[0], turned(rect(20, 20, 260, 50), angle, width, height),
                               atol=1e-3)


class Reader:
    """A stand-in recognizer: a crop reads with confidence 0.95 when its top half is darker
    than its bottom half (the test's 'text' is a dark bar on top), else 0.3."""

    def __init__(self):
        self.crops = 0

    def __call__(self, crops):
        self.crops += len(crops)
        out = []
        for crop in crops:
            half = crop.shape[0] // 2
            upright = crop[:half].mean() < crop[half:].mean()
            out.append(Reading("x", 0.95 if upright else 0.3))
        return out


def page_with_bars(boxes_up, flipped=()):
    """A white 300 x 400 upright page with a dark bar on the top half of each box (the one
    way up the stand-in reader reads), the bar at the bottom for boxes in ``flipped``."""
    page = np.full((300, 400, 3), 255, np.uint8)
    for i, (l, t, r, b) in enumerate(boxes_up):
        mid = (t + b) // 2
        if i in flipped:
            page[mid:b, l:r] = 0
        else:
            page[t:mid, l:r] = 0
    return page


@pytest.mark.parametrize("angle", orientation.ANGLES)
def test_decision_finds_the_page_and_an_upside_down_line(angle):
    words = [(20, 20, 140, 50), (160, 20, 300, 50), (20, 80, 200, 110), (20, 150, 180, 180)]
    page = page_with_bars(words, flipped={3})
    image = np.ascontiguousarray(np.rot90(page, k=-angle // 90))
    boxes = np.stack([craft_order(turned(rect(*w), angle, 400, 300)) for w in words])
    reader = Reader()
    decision = orientation.decide(image, boxes, reader, margin=0.0)
    assert decision.page == angle
    assert decision.angles == [angle, angle, angle, (angle + 180) % 360]
    assert all(reading.score == 0.95 for reading in decision.readings)
    assert reader.crops == 2 * 4 + 4          # every box voted (both ways), then read once


def test_an_upside_down_line_reads_right_to_left_in_the_page_and_starts_at_its_own_corner():
    """Two lines of an upright page; the second is upside down (its boxes' angle 180): its
    words run right to left on the page, so its reading order is reversed."""
    words = [rect(20, 20, 120, 50), rect(140, 20, 260, 50),
             orientation.oriented(rect(20, 60, 100, 90), 180),     # its second word
             orientation.oriented(rect(120, 60, 240, 90), 180)]    # its first word
    lines, polygons, _ = reading_order.layout(np.stack(words), 0, 400, 300,
                                              flipped=[False, False, True, True])
    assert lines == [[0, 1], [3, 2]]
    np.testing.assert_allclose(polygons[1], orientation.oriented(rect(20, 60, 240, 90), 180),
                               atol=1e-3)
