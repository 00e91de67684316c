"""Reading order (ocr_pipeline.reading_order): lines top to bottom, boxes left to right."""

import numpy as np

from ocr_pipeline import reading_order


def box(left, top, right, bottom, slant=0.0):
    return [[left, top], [right, top + slant], [right, bottom + slant], [left, bottom]]


def test_boxes_are_grouped_into_lines_and_ordered():
    boxes = np.array([box(300, 105, 380, 135), box(10, 10, 90, 40), box(10, 100, 120, 130),
                      box(100, 12, 200, 42), box(220, 8, 260, 38)], np.float32)
    assert reading_order.lines_of(boxes) == [[1, 3, 4], [2, 0]]
    texts = ["dog", "the", "lazy", "quick", "fox"]
    assert reading_order.full_text(texts, reading_order.lines_of(boxes)) == \
        "the quick fox\nlazy dog"


def test_a_slanted_line_stays_one_line_and_a_small_word_below_does_not_join():
    boxes = np.array([box(0, 0, 100, 30, slant=10), box(110, 10, 210, 40, slant=10),
                      box(20, 45, 60, 60)], np.float32)
    assert reading_order.lines_of(boxes) == [[0, 1], [2]]


def test_empty_texts_and_no_boxes():
    boxes = np.array([box(0, 0, 10, 10), box(20, 0, 30, 10)], np.float32)
    assert reading_order.full_text(["", "b"], reading_order.lines_of(boxes)) == "b"
    assert reading_order.lines_of(np.zeros((0, 4, 2), np.float32)) == []
    assert reading_order.full_text([], []) == ""


# -- lines and paragraphs --------------------------------------------------------------------

def test_lines_come_back_from_the_ensemble_outputs_and_have_rectangles():
    boxes = np.array([box(300, 105, 380, 135), box(10, 10, 90, 40), box(10, 100, 120, 130),
                      box(100, 10, 200, 40)], np.float32)
    lines = reading_order.lines_of(boxes)
    order = reading_order.reading_order(lines)
    of_box = reading_order.line_of_box(lines, len(boxes))
    assert (order, of_box) == ([1, 3, 2, 0], [1, 0, 1, 0])
    assert reading_order.lines_from(np.array(order), np.array(of_box)) == lines
    polygons = reading_order.line_polygons(boxes, lines)
    assert polygons.shape == (2, 4, 2)
    np.testing.assert_allclose(polygons[0], [[10, 10], [200, 10], [200, 40], [10, 40]])
    assert reading_order.line_polygons(np.zeros((0, 4, 2), np.float32), []).shape == (0, 4, 2)


def test_paragraphs_split_at_a_gap_a_size_change_and_a_column_change():
    lines = [box(10, 10, 400, 30), box(10, 36, 380, 56),          # a paragraph of two lines
             box(10, 90, 300, 110),                                 # after a gap of 34 (> 0.8 x 20)
             box(10, 114, 300, 154),                                # twice as high: a heading
             box(600, 158, 900, 178)]                               # beside, not below
    boxes = np.array(lines, np.float32)
    groups = [[i] for i in range(len(lines))]
    assert reading_order.paragraphs_of(boxes, groups) == [0, 0, 1, 2, 3]
    assert reading_order.paragraphs_of(boxes, []) == []
