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


def lined_maps(height: int, width: int = 200):
    """Maps of a page whose text runs horizontally: two long text lines at its top left."""
    region, link = maps(height, width)
    region[10:20, 10:120] = region[30:40, 10:120] = 0.9
    return region, link


def table_maps(gap: int, blob: int = 8):
    """Two long text lines (the page's text runs horizontally) and, right of them, a column of
    four single characters ``blob`` px tall, ``gap`` px apart, linked into one column as the
    link refiner links a table's quantity column."""
    region, link = lined_maps(140)
    top = 10
    for _ in range(4):
        region[top:top + blob, 160:165] = 0.9
        top += blob + gap
    link[10:top - gap, 161:164] = 0.8
    return region, link


def test_a_column_of_single_characters_across_the_text_is_cut_into_its_cells():
    found, scores = detect(*table_maps(gap=6))          # 6 >= STACK_GAP * 8
    cells = sorted((box for box in found if box[:, 0].min() > 150), key=lambda b: b[0, 1])
    assert len(found) == 6 and len(cells) == 4
    # Each cell its character's own box (5 x 8, dilated: 8 x 11, not tall enough to be read
    # as turned text, so not widened).
    np.testing.assert_allclose(cells[0], [[158, 8], [166, 8], [166, 19], [158, 19]], atol=0.5)
    assert [round(float(b[:, 1].mean())) for b in cells] == [14, 28, 42, 56]
    assert scores.tolist() == pytest.approx([0.9] * 6)


def test_characters_closer_than_the_stack_gap_stay_one_box():
    found, _ = detect(*table_maps(gap=3))               # 3 < STACK_GAP * 8: a vertical word
    assert len(found) == 3
    column = next(box for box in found if box[:, 0].min() > 150)
    assert column[:, 1].max() - column[:, 1].min() > 40


def test_a_turned_line_across_the_text_is_not_cut_into_words():
    region, link = lined_maps(140)
    region[10:50, 160:168] = region[56:60, 160:168] = region[66:110, 160:168] = 0.9
    link[10:110, 161:167] = 0.8      # words of 40 and 44 px around a lone 4-px character
    found, _ = detect(region, link)
    assert len(found) == 3


def test_on_a_vertical_page_vertical_columns_are_its_text():
    region, link = table_maps(gap=6)
    region[10:20, 10:120] = region[30:40, 10:120] = 0
    region[10:120, 20:30] = region[10:120, 40:50] = 0.9   # two vertical lines
    found, _ = detect(region, link)
    assert len(found) == 3


def test_a_lone_upright_character_is_grown_to_a_square():
    region, link = maps(140, 200)
    region[10:20, 10:120] = 0.9
    region[50:62, 160:164] = 0.9                             # a "1": 4 x 12
    found, _ = detect(region, link)
    one = next(box for box in found if box[:, 0].min() > 150)
    # Dilated to 7 x 15 (2:1, what a recognizer turns), grown to 15 x 15 about its centre.
    np.testing.assert_allclose(one, [[154, 48], [169, 48], [169, 63], [154, 63]], atol=0.5)


def test_a_short_turned_word_across_the_text_keeps_its_direction():
    region, link = lined_maps(140)
    for top in (50, 57, 64):                     # three letters 1 px apart, turned 90 degrees
        region[top:top + 6, 160:170] = 0.9
    link[50:70, 162:168] = 0.8
    found, _ = detect(region, link)
    word = next(box for box in found if box[:, 0].min() > 150)
    np.testing.assert_allclose(word, [[157, 47], [172, 47], [172, 72], [157, 72]], atol=0.5)


def test_a_turned_label_of_short_words_is_not_cut_into_them():
    region, link = lined_maps(160)
    top = 50
    for letters in (3, 2, 4):                    # words of 3, 2 and 4 letters, 5 px apart
        for _ in range(letters):
            region[top:top + 6, 160:170] = 0.9
            top += 7
        top += 4
    link[50:top - 4, 162:168] = 0.8
    found, _ = detect(region, link)
    assert len(found) == 3
    label = next(box for box in found if box[:, 0].min() > 150)
    assert np.ptp(label[:, 1]) > 4 * np.ptp(label[:, 0])


def columns_maps():
    """A title of six linked words across the page, then two columns of five lines (region
    bars 110 x 6, 14 px apart, the columns' characters 15 px apart); the third lines of the
    two columns are linked across the gutter into one component, as the link refiner joins
    them where a gutter is narrow."""
    region, link = maps(120, 260)
    for left in range(10, 245, 40):                     # words 36 px long, 4 px apart
        region[8:14, left:left + 36] = 0.9
    link[9:13, 10:245] = 0.8
    for row in range(5):
        top = 30 + 14 * row
        region[top:top + 6, 10:120] = region[top:top + 6, 135:245] = 0.9
    link[59:63, 118:137] = 0.8
    return region, link


def test_two_columns_lines_joined_across_their_gutter_are_cut_there():
    found, scores = detect(*columns_maps())
    assert len(found) == 11 and scores.tolist() == pytest.approx([0.9] * 11)
    third = sorted((b for b in found if 55 < b[:, 1].mean() < 65), key=lambda b: b[0, 0])
    # Each half its own characters (10-119 and 135-244; the link pixels in the gutter are not
    # text), dilated by 2 px a side.
    assert [(float(b[:, 0].min()), float(b[:, 0].max())) for b in third] == [(8, 121), (133, 246)]
    title = next(b for b in found if b[:, 1].mean() < 20)
    assert float(title[:, 0].min()) < 10 and float(title[:, 0].max()) > 240   # not cut


def column_of(found):
    """The boxes whose left edge lies between 150 and 180 px (the quantity column of the maps
    below), top to bottom."""
    return sorted((box for box in found if 150 < box[:, 0].min() < 180), key=lambda b: b[0, 1])


def extents(boxes):
    """Each box's ``(top, bottom)``, px."""
    return [(float(box[:, 1].min()), float(box[:, 1].max())) for box in boxes]


def tight_rows_maps(column: tuple[slice, slice]):
    """Two rows of a tight table (rows 2 px apart): in each, a long cell (the page's text runs
    horizontally), a character and a number; ``column``, a region blob ``(rows, columns)``
    for the first row's character, linked to the second row's 5 x 8 character."""
    region, link = maps(60, 220)
    region[10:18, 10:120] = region[20:28, 10:120] = 0.9
    region[10:18, 185:210] = region[20:28, 185:210] = 0.9
    region[column] = 0.9
    region[20:28, 160:165] = 0.9
    link[14:24, 161:164] = 0.8
    return region, link


def test_stacked_characters_in_two_of_the_pages_rows_are_cut_apart_however_close():
    # 2 px apart: under STACK_GAP's 4, but each character beside its own row's cell.
    found, _ = detect(*tight_rows_maps((slice(10, 18), slice(160, 165))))
    cells = column_of(found)
    assert len(found) == 6 and len(cells) == 2
    assert extents(cells) == [(8, 19), (18, 29)]


def test_a_heading_linked_to_the_cell_below_it_is_cut_from_it():
    # A 16-px word over a 5-px digit: near-square together (not across the text), but twice a
    # row's height.
    found, _ = detect(*tight_rows_maps((slice(10, 18), slice(154, 170))))
    column = sorted((box for box in found if 140 < box[:, 0].min() < 180),
                    key=lambda b: b[0, 1])
    assert len(found) == 6
    assert [round(float(np.ptp(b[:, 0]))) for b in column] == [20, 8]
    assert float(column[0][:, 1].max()) < float(column[1][:, 1].mean())


def test_a_heading_as_tall_as_two_rows_between_them_stays_whole():
    """A large word's letters, linked, beside two rows of smaller print on both sides: tall,
    and flanked by rows, but its letters are one span across the text (one row)."""
    region, link = maps(60, 240)
    region[10:18, 10:120] = region[20:28, 10:120] = 0.9
    region[10:18, 215:235] = region[20:28, 215:235] = 0.9
    for left in range(150, 200, 12):                    # 4 letters 18 px high, 2 px apart
        region[10:28, left:left + 10] = 0.9
    link[16:22, 150:200] = 0.8
    found, _ = detect(region, link)
    heading = [box for box in found if 140 < box[:, 0].min() < 160]
    assert len(found) == 5 and len(heading) == 1
    assert np.ptp(heading[0][:, 1]) > 18


def test_two_rows_characters_run_together_are_cut_at_their_neck():
    """A "1" above a "7" whose region score runs together (one blob) beside two rows'
    cells: cut where the blob narrows between the rows."""
    region, link = maps(60, 220)
    region[10:18, 10:120] = region[22:30, 10:120] = 0.9
    region[10:18, 185:210] = region[22:30, 185:210] = 0.9
    region[10:20, 161:164] = 0.9                # the "1", 3 px wide
    region[20:22, 162:163] = 0.9                # the neck, 1 px
    region[22:30, 159:166] = 0.9                # the "7", 7 px wide
    found, _ = detect(region, link)
    column = sorted((box for box in found if 150 < box[:, 0].min() < 180),
                    key=lambda b: b[0, 1])
    assert len(found) == 6 and len(column) == 2
    assert float(column[0][:, 1].mean()) < 18 < float(column[1][:, 1].mean())


def test_a_word_turned_down_the_margin_beside_rows_is_not_cut_into_letters():
    """Each of its letters has a row of the page centred in it, but the rows stand on one
    side of it only: not a cell between a row's other cells (example.png's "image" and
    "result" beside its infographic)."""
    region, link = maps(120, 200)
    for top in range(10, 100, 8):                       # rows 4 px high, 8 px apart
        region[top:top + 4, 10:120] = 0.9
    for top in range(10, 94, 12):                       # letters 10 px long, 2 px apart
        region[top:top + 10, 155:171] = 0.9
    link[10:92, 160:166] = 0.8
    found, _ = detect(region, link)
    word = [box for box in found if box[:, 0].min() > 150]
    assert len(word) == 1 and np.ptp(word[0][:, 1]) > 80


def test_a_row_is_taken_whole_when_its_long_cell_sits_lower_than_the_character():
    """The second row's description sits 3-5 px lower than its digit (descenders): its centre
    lies past the digit's span across the text, and the row still flanks the digit."""
    region, link = tight_rows_maps((slice(10, 18), slice(160, 165)))
    region[20:28, 10:120] = 0
    region[23:33, 10:120] = 0.9
    found, _ = detect(region, link)
    cells = column_of(found)
    assert len(found) == 6 and len(cells) == 2
    assert extents(cells) == [(8, 19), (18, 29)]


def faint_cell_maps(peak: float, column: slice):
    """Two rows of a table (a long cell and a number each) and, in the second row's line, a
    5 x 8 character whose region score peaks at ``peak`` in ``column``."""
    region, link = maps(60, 220)
    region[10:18, 10:120] = region[22:30, 10:120] = 0.9
    region[10:18, 185:210] = region[22:30, 185:210] = 0.9
    region[10:18, 160:165] = 0.9
    region[22:30, column] = peak
    return region, link


@pytest.mark.parametrize("peak, column, kept", [
    (0.6, slice(160, 165), True),        # between its row's boxes: 0.6 >= 0.75 * 0.7
    (0.5, slice(160, 165), False),       # under ROW_PEAK_SHARE of text_threshold
    (0.6, slice(212, 217), False),       # beyond the row's last box: no row around it
])
def test_a_faint_character_is_kept_only_between_its_rows_boxes(peak, column, kept):
    found, scores = detect(*faint_cell_maps(peak, column))
    faint = [box for box, score in zip(found, scores) if score < 0.7]
    assert len(found) == 5 + kept and len(faint) == kept
    if kept:    # its pixels dilated by 2 px a side, as a confident character's
        np.testing.assert_allclose(faint[0], [[158, 20], [166, 20], [166, 31], [158, 31]])


def test_a_thin_character_in_a_column_of_cells_is_its_rows_cell():
    """Three rows' quantities linked into one column, the middle one a 9-pixel blob (a thin
    "7" of small print, under MIN_COMPONENT_AREA): its row is centred in it, so it is a cell
    of its own, not a speck whose pixels go half to the cell above and half below."""
    region, link = maps(60, 220)
    for top in (10, 22, 34):
        region[top:top + 8, 10:120] = region[top:top + 8, 185:210] = 0.9
    region[10:18, 160:165] = region[34:42, 160:165] = 0.9
    region[25:28, 161:164] = 0.9
    link[14:38, 161:164] = 0.8
    found, _ = detect(region, link)
    column = sorted((box for box in found if 150 < box[:, 0].min() < 180),
                    key=lambda b: b[0, 1])
    assert len(found) == 9 and len(column) == 3
    assert [float(b[:, 1].mean()) for b in column] == [13.5, 26.5, 37.5]


def test_a_row_of_short_cells_flanks_a_stack_of_its_digits():
    """With refine=false, a row's numbers come as short pieces ("4." and "50"), no box as
    long as a word: the row is still told by them, and the stacked quantities are cut."""
    region, link = maps(60, 220)
    region[10:18, 10:120] = region[20:28, 10:120] = 0.9            # the descriptions
    for left in (185, 200):                                        # "4." "50" per row
        region[10:18, left:left + 10] = region[20:28, left:left + 10] = 0.9
    region[10:18, 160:165] = region[20:28, 160:165] = 0.9          # the quantities, 2 px
    link[14:24, 161:164] = 0.8                                     # apart and linked
    found, _ = detect(region, link)
    cells = column_of(found)
    assert len(found) == 8 and len(cells) == 2
    assert float(cells[0][:, 1].mean()) < 20 < float(cells[1][:, 1].mean())



@pytest.mark.parametrize("rows, columns, kept", [
    (slice(24, 27), slice(161, 164), True),    # 9 px: under CRAFT's 10, in its row
    (slice(24, 28), slice(161, 163), True),    # 8 px: ROW_MIN_AREA
    (slice(24, 31), slice(162, 163), False),   # 7 px: a speck
])
def test_a_small_character_is_kept_only_where_its_row_holds_it(rows, columns, kept):
    """A lone "1" of a quantity cell comes as 8 or 9 score-map pixels at the default size."""
    region, link = faint_cell_maps(0.9, slice(160, 165))
    region[22:30, 160:165] = 0
    region[rows, columns] = 0.9
    found, _ = detect(region, link)
    assert len(found) == 5 + kept
    alone, _ = detect(*faint_cell_maps(0.0, slice(160, 165)))
    region[22:30, 185:210] = 0                  # the row's number gone: nothing after it
    found, _ = detect(region, link)
    assert len(found) == len(alone) - 1


def _faint_column(region):          # both rows' characters scored 0.6, linked into one column
    region[10:18, 160:165] = region[20:28, 160:165] = 0.6


def _one_wide_neck(region):         # a "1" running into the "7" below down to 3 of its 5 px
    region[18:20, 160:165] = 0
    region[18:20, 161:164] = 0.9


def _foot_parted(region):           # the upper character's foot parted from it at low_text
    region[10:18, 160:165] = 0
    region[10:15, 160:165] = region[16:18, 160:165] = 0.9


def _seven_parted(region):          # the lower "7"'s bar parted from its stem at low_text
    region[20:28, 160:165] = 0
    region[20:22, 160:165] = 0.9
    region[23:28, 162:164] = 0.9


@pytest.mark.parametrize("edit, cells", [
    # Faint (under text_threshold, at least ROW_PEAK_SHARE of it): cut into cells, each kept
    # between its row's boxes.
    (_faint_column, [(8, 19), (18, 29)]),
    # Over STACK_NECK of the widest, but a column one character wide (STACK_NARROW): cut
    # where it narrows between the rows.
    (_one_wide_neck, [(8, 20), (17, 29)]),
    # The foot holds no row: cut at the widest gap from one row's span to the next, not the
    # first, so the foot stays with its character.
    (_foot_parted, [(8, 19), (18, 29)]),
    # Only the stem holds its row: the bar stays with it, not with the "1" and not joining
    # them into "17" (first-user trial: an invoice tilted 3 degrees read "Service fee Spare
    # fuse pack 17").
    (_seven_parted, [(8, 19), (19, 29)])])
def test_two_tight_rows_quantities_come_apart_into_their_own_cells(edit, cells):
    region, link = tight_rows_maps((slice(10, 18), slice(160, 165)))
    edit(region)
    found, _ = detect(region, link)
    assert len(found) == 6 and extents(column_of(found)) == cells
