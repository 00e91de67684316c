"""Reading order (ocr_pipeline.reading_order): lines top to bottom, boxes left to right."""

import math

import numpy as np
import pytest

from ocr_pipeline import reading_order
from tests.image_factory import letter_page


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


# -- tilted pages -----------------------------------------------------------------------------

def turned(points, degrees):
    """``points`` turned about the origin by ``degrees`` counter-clockwise (y down)."""
    a = math.radians(degrees)
    return [[x * math.cos(a) + y * math.sin(a), y * math.cos(a) - x * math.sin(a)]
            for x, y in points]


def test_the_tilt_is_the_long_boxes_median_direction():
    line = box(100, 100, 400, 130)                 # 10:1, tells the direction
    letter = box(500, 100, 530, 130)                # square: tells nothing
    pillar = box(600, 100, 630, 400)                # vertical text: beyond 15 degrees
    boxes = np.array([turned(line, 4), turned(line, 4), turned(line, 3.5), turned(letter, 30),
                      turned(pillar, 0)], np.float32)
    assert reading_order.text_tilt(boxes) == pytest.approx(-4.0, abs=0.01)
    # Corners starting anywhere (a flipped box's start at its own top-left) are one direction.
    assert reading_order.text_tilt(np.roll(boxes[:1], 2, axis=1)) == pytest.approx(-4.0, abs=0.01)
    assert reading_order.text_tilt(np.array([letter, pillar], np.float32)) == 0.0
    assert reading_order.text_tilt(np.zeros((0, 4, 2), np.float32)) == 0.0


def test_a_few_long_tilted_boxes_among_level_words_do_not_turn_the_page():
    words = [box(60 * column, 40 * row, 60 * column + 40, 40 * row + 25)      # 1.6:1: no vote
             for row in range(3) for column in range(6)]
    sign = turned(box(400, 200, 600, 230), 10)
    boxes = np.array(words + [sign], np.float32)
    assert reading_order.text_tilt(boxes) == 0.0
    lines, _, _ = reading_order.layout(boxes)
    assert lines == [list(range(0, 6)), list(range(6, 12)), list(range(12, 18)), [18]]


def test_an_even_split_is_the_mean_and_a_flat_box_does_not_vote():
    boxes = np.array([turned(box(0, 0, 300, 30), 5), turned(box(0, 100, 300, 130), -5)],
                     np.float32)
    assert reading_order.text_tilt(boxes) == pytest.approx(0.0, abs=1e-6)
    assert reading_order.text_tilt(boxes[::-1]) == pytest.approx(0.0, abs=1e-6)
    flat = np.array([turned(box(0, 0, 300, 0), 10), box(0, 100, 300, 130)], np.float32)
    assert reading_order.text_tilt(flat) == 0.0


def test_a_wide_scan_is_levelled_at_half_a_degree():
    """A4 at 300 dpi: at 0.49 degrees its lines rise 21 px across the page, more than the gap
    between two lines of 30-px words 34 px apart."""
    words = [turned(box(40 + 130 * column, 34 * row, 160 + 130 * column, 34 * row + 30), -0.49)
             for row in range(20) for column in range(19)]
    lines, _, _ = reading_order.layout(np.array(words, np.float32))
    assert lines == [list(range(19 * row, 19 * row + 19)) for row in range(20)]


def test_a_level_page_is_grouped_as_it_is():
    boxes = np.array([turned(box(0, 0, 300, 30), 0.3), box(0, 60, 300, 90)], np.float32)
    np.testing.assert_array_equal(reading_order.level(boxes), boxes)


@pytest.mark.parametrize("tilt", [-5.0, -3.0, 3.0, 5.0])
def test_a_tilted_pages_words_come_back_in_the_order_they_were_written(tilt):
    _, words = letter_page(skew=tilt, seed=3)
    boxes = np.array([points for _, points in words], np.float32)
    assert reading_order.text_tilt(boxes) == pytest.approx(-tilt, abs=0.1)
    lines, polygons, _ = reading_order.layout(boxes)
    assert reading_order.reading_order(lines) == list(range(len(words)))
    assert len(lines) == len(polygons) == 6
    # Grouped by their axis-aligned extents, the same boxes mix their lines.
    assert reading_order.reading_order(reading_order.lines_of(boxes)) != list(range(len(words)))


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


@pytest.mark.parametrize("tilt", [-3.0, 3.0])
def test_a_tilted_page_of_level_word_boxes_is_levelled_where_their_centres_line_up(tilt):
    """refine=false's word boxes come out level on a tilted page; their centres still rise
    along their lines: 8 rows of 12 words 20 px high, 40 px apart, 12 px between words,
    rising some 50 px across the page."""
    rise = math.tan(math.radians(tilt))
    words = []
    for row in range(8):
        left = 0
        for column in range(12):
            width = 30 + 17 * ((row * 5 + column * 3) % 5)        # 30-98 px, no aligned gaps
            centre = left + width / 2
            words.append(box(left, 40 * row + centre * rise - 10,
                             left + width, 40 * row + centre * rise + 10))
            left += width + 12
    boxes = np.array(words, np.float32)
    assert reading_order.text_tilt(boxes) == pytest.approx(tilt, abs=0.01)
    lines, _, _ = reading_order.layout(boxes)
    assert lines == [list(range(12 * row, 12 * row + 12)) for row in range(8)]


def test_a_level_table_of_word_boxes_whose_rows_start_with_capitals_stays_level():
    """Each row's first word stands 6 px taller (a capital), so its centre sits 3 px higher
    than the next word's; from word to word that reads as a 1.7-degree tilt, which across a
    1,500-px table would carry each row into the next. Its words' centres line up level."""
    words = []
    for row in range(8):
        top = 40 * row
        words += [box(0, top - 6, 120, top + 20), box(132, top, 192, top + 20),
                  box(204, top, 264, top + 20), box(1440, top, 1500, top + 20)]
    boxes = np.array(words, np.float32)
    assert reading_order.text_tilt(boxes) == 0.0
    lines, _, _ = reading_order.layout(boxes)
    assert lines == [list(range(4 * row, 4 * row + 4)) for row in range(8)]


@pytest.mark.parametrize("tilt", [-1.0, 1.0])
def test_a_table_of_lines_fitted_level_at_one_degree_is_levelled_by_their_centres(tilt):
    """At 1 degree a short line's rectangle comes out level (it rises a pixel along its
    length), so the lines' directions tell 0.0; across a 2,400-px table the rows still rise
    by one row's spacing. Their centres stack at the tilt, within what rectangles of cells
    5.5-7 heights long miss (PROFILE_REFINE_RISE: 1.6 degrees)."""
    rise = math.tan(math.radians(tilt))
    words = []
    for row in range(7):
        for left, width in ((60, 140), (1100, 24), (1450, 110), (2200, 130)):
            centre = left + width / 2
            words.append(box(left, 44 * row + centre * rise - 10,
                             left + width, 44 * row + centre * rise + 10))
    boxes = np.array(words, np.float32)
    assert reading_order.text_tilt(boxes) == pytest.approx(tilt, abs=0.1)
    lines, _, _ = reading_order.layout(boxes)
    assert lines == [list(range(4 * row, 4 * row + 4)) for row in range(7)]


@pytest.mark.parametrize("tilt", [0.0, 3.0, -3.0])
def test_a_tilted_pages_paragraphs_are_its_upright_ones(tilt):
    """A heading and two paragraphs of three lines, one line box each, 1,000 px long: tilted
    3 degrees, each line's upright extent is some 52 px taller than the line and reaches into
    the next; levelled, the gaps and heights are the page's own."""
    lines = [box(0, 0, 1000, 40)]
    for top in (80, 206):                          # 26 px apart within, 74 px between
        lines += [box(0, top + 26 * row, 1000, top + 26 * row + 20) for row in range(3)]
    boxes = np.array([turned(line, tilt) for line in lines], np.float32)
    found, _, paragraphs = reading_order.layout(boxes)
    assert found == [[i] for i in range(7)]
    assert paragraphs == [0, 1, 1, 1, 2, 2, 2]


def test_two_level_columns_whose_baselines_differ_are_not_turned():
    """Level prose in two columns, the right one's lines set 15 px lower: at 1.7 degrees each
    bin holds a line of each column (twice as sharp as level), but a rectangle 400 px long
    tells its direction to within a fraction of that (PROFILE_REFINE_RISE)."""
    lines = []
    for row in range(10):
        lines += [box(50, 40 * row, 450, 40 * row + 26),
                  box(550, 40 * row + 15, 950, 40 * row + 41)]
    boxes = np.array(lines, np.float32)
    assert reading_order.text_tilt(boxes) == 0.0
    found, _, _ = reading_order.layout(boxes)
    assert found == [[i] for i in range(0, 20, 2)] + [[i] for i in range(1, 20, 2)]


def test_a_few_scattered_characters_do_not_tilt_the_page():
    """Near-square boxes (no direction) scattered over a photo: fewer than
    CHARACTERS_MIN_BOXES, whatever angle their centres happen to stack at."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        xs, ys = rng.uniform(0, 600, 14), rng.uniform(0, 400, 14)
        boxes = np.array([box(x, y, x + 30, y + 30) for x, y in zip(xs, ys)], np.float32)
        assert reading_order.text_tilt(boxes) == 0.0
