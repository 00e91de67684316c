"""Prose columns (ocr_pipeline.columns, reading_order.column_lines) on synthetic boxes."""

import numpy as np

from ocr_pipeline import columns, reading_order
from tests.image_factory import columns_page, letter_lines
from tests.pipeline.test_reading_order import box

HEIGHT = 20                                 # every synthetic line's box height, pixels


def column(left, right, top, lines, pitch=30, last=None):
    """A column of ``lines`` line boxes from ``left`` to ``right``, ``pitch`` apart from
    ``top``; the last one ends at ``last`` (a paragraph's short last line)."""
    found = []
    for number in range(lines):
        end = last if last is not None and number == lines - 1 else right
        found.append(box(left, top + number * pitch, end, top + number * pitch + HEIGHT))
    return found


def read(boxes):
    return reading_order.column_lines(np.array(boxes, np.float32))


def test_two_columns_are_read_one_after_the_other():
    # Left lines every 30 px, right lines every 34 px from 8 px lower: they share no baseline,
    # and grouped into rows across the page they interleave.
    left = column(10, 400, 100, 5, last=250)
    right = column(430, 820, 108, 4, pitch=34)
    title = [box(10, 40, 600, 40 + 2 * HEIGHT)]
    boxes = title + left + right
    assert read(boxes) == [[0], [1], [2], [3], [4], [5], [6], [7], [8], [9]]
    rows = reading_order.lines_of(np.array(boxes, np.float32))
    assert [1, 6] in rows                   # without columns, the first row spans the gutter


def test_three_columns_are_read_in_three():
    boxes = column(10, 300, 100, 4) + column(330, 620, 100, 4) + column(650, 940, 100, 4)
    assert read(boxes) == [[i] for i in range(12)]


def test_a_table_keeps_its_rows():
    # Description (wide words), quantity, unit price, amount: number cells far apart.
    boxes = []
    for row in range(5):
        top = 100 + 30 * row
        boxes += [box(10, top, 260, top + HEIGHT), box(500, top, 515, top + HEIGHT),
                  box(700, top, 760, top + HEIGHT), box(900, top, 960, top + HEIGHT)]
    assert read(boxes) == [[4 * row + i for i in range(4)] for row in range(5)]


def test_labels_beside_their_values_keep_their_rows():
    boxes = []
    for row in range(4):
        top = 100 + 30 * row
        boxes += [box(10, top, 90, top + HEIGHT), box(140, top, 700, top + HEIGHT)]
    assert read(boxes) == [[2 * row, 2 * row + 1] for row in range(4)]


def test_a_line_below_the_columns_comes_after_both():
    left = column(10, 400, 100, 3)                  # ends at 180
    right = column(430, 820, 100, 5)                # ends at 240
    heading = [box(10, 270, 200, 270 + HEIGHT)]     # left only, 90 px below the left column
    boxes = left + right + heading
    assert read(boxes) == [[0], [1], [2], [3], [4], [5], [6], [7], [8]]
    # The left column's own short last line, at its line spacing below the right column's
    # end, stays the left column's.
    left = column(10, 400, 100, 6, last=150)
    right = column(430, 820, 100, 4)
    assert read(left + right) == [[i] for i in range(10)]


def test_a_date_set_right_above_the_columns_comes_first():
    date = [box(600, 50, 820, 50 + HEIGHT)]
    boxes = column(10, 400, 100, 4) + column(430, 820, 100, 4) + date
    assert read(boxes) == [[8], [0], [1], [2], [3], [4], [5], [6], [7]]


def test_a_box_across_the_gutter_is_cut_only_where_its_characters_leave_it_white():
    # Two columns of five lines whose third lines are one box (joined across the gutter), under
    # a title across the page.
    left, right = column(10, 400, 100, 5), column(430, 820, 100, 5)
    joined = [box(10, 160, 820, 160 + HEIGHT)]
    title = [box(10, 40, 820, 40 + HEIGHT)]
    boxes = np.array(left[:2] + left[3:] + right[:2] + right[3:] + joined + title, np.float32)
    lines = reading_order.lines_of(boxes)
    asked = []

    def cuttable(index, cut):
        asked.append(index)
        return index == 8
    assert columns.crossing_boxes(boxes, lines, cuttable) == [(8, 415.0)]
    assert sorted(set(asked)) == [8, 9]     # the title asked too, and not cut
    assert columns.crossing_boxes(boxes, lines, lambda index, cut: False) == []


def test_a_single_column_has_no_runs():
    boxes = np.array(column(10, 800, 100, 6, last=300), np.float32)
    assert columns.column_runs(boxes, reading_order.lines_of(boxes)) == []
    assert columns.column_runs(np.zeros((0, 4, 2), np.float32), []) == []


def test_a_drawn_two_column_pages_word_boxes_are_read_in_its_columns():
    for seed, skew in ((0, 0.0), (1, 3.0), (2, -4.0)):
        image, words = columns_page(seed=seed, skew=skew)
        boxes = np.array([points for _, points in words], np.float32)
        texts = [text for text, _ in words]
        got = reading_order.full_text(texts, read(reading_order.level(boxes)))
        assert got.splitlines() == [" ".join(line) for line in letter_lines(words)]


def test_text_set_with_wide_spaces_has_no_gutter():
    # Ten words a line, two box heights apart, each line starting 7 words further on: here
    # and there the spaces of six lines or more line up, as wide as any other space.
    vocabulary = ("Reduce your risk of infection clean hands with soap and water cover nose "
                  "mouth when coughing avoid close contact cook meat eggs thoroughly").split()
    boxes = []
    for row in range(32):
        x, top = 24, 24 + 44 * row
        for i in range(10):
            length = 11 * len(vocabulary[(row * 7 + i) % len(vocabulary)])
            boxes.append(box(x, top, x + length, top + 26))
            x += length + 44
    assert read(boxes) == [list(range(10 * row, 10 * row + 10)) for row in range(32)]


def test_a_right_column_that_starts_higher_is_read_whole_after_the_left():
    left, right = column(10, 400, 300, 4), column(430, 820, 100, 10)
    assert read(left + right) == [[i] for i in range(14)]
