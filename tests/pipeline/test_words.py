"""Words from CTC steps and crops (ocr_pipeline.words, recognition.crop_to_image), no Triton."""

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from ocr_pipeline import recognition, words
from ocr_pipeline.recognition import Glyph, Reading, Span, ctc_greedy
from tests.image_factory import LETTER_FONTS


def test_ctc_greedy_says_where_each_character_was_emitted():
    classes = ["", "a", "b", " "]
    steps = [0, 1, 1, 0, 3, 0, 2, 0, 2, 3]       # blank a a blank space blank b blank b space
    confidence = np.array([[0.75 if t == 2 else 0.5 for t in range(len(steps))]], np.float32)
    [reading] = ctc_greedy(np.array([steps]), confidence, classes)
    assert reading.text == "a bb"
    # "a" over steps 1-2 at its best step's probability; the trailing space stripped.
    assert reading.glyphs == (Glyph("a", 1, 2, 0.75), Glyph(" ", 4, 4, 0.5),
                              Glyph("b", 6, 6, 0.5), Glyph("b", 8, 8, 0.5))


def test_words_are_runs_between_spaces_and_each_han_character_alone():
    glyphs = [Glyph(c, i, i, 0.9) for i, c in enumerate("ab cd 東京x")]
    assert ["".join(g.text for g in w) for w in words.split_words(glyphs)] == \
        ["ab", "cd", "東", "京", "x"]


def test_glyph_spans_reach_halfway_to_neighbours_and_score_the_weakest_character():
    # A 480 x 48 crop: the recognizer sees it at its own size, 8 columns a step.
    crop = np.zeros((48, 480, 3), np.uint8)
    glyphs = (Glyph("a", 2, 2, 0.9), Glyph("b", 4, 4, 0.6), Glyph(" ", 8, 8, 0.99),
              Glyph("c", 12, 12, 0.8), Glyph("d", 14, 15, 0.7))
    [(ab, ab_chars, ab_reach), (cd, cd_chars, _)] = words.glyph_spans(glyphs, crop)
    # centres: a 20, b 36, c 100, d 120 (steps 14-15: columns 112-128)
    assert (ab.text, ab.left, ab.right, ab.score) == ("ab", 12.0, 44.0, 0.6)
    assert [(c.left, c.right) for c in ab_chars] == [(12.0, 28.0), (28.0, 44.0)]
    assert ab_reach == (4.0, 52.0)              # a whole pitch out, and never past 68 (halfway)
    assert (cd.text, cd.left, cd.right, cd.score) == ("cd", 90.0, 130.0, 0.7)


def test_crop_to_image_undoes_the_warp_and_the_turn():
    image = np.zeros((300, 400, 3), np.uint8)
    flat = np.array([[50, 60], [350, 80], [345, 140], [45, 120]], np.float32)
    tall = np.array([[300, 20], [340, 22], [335, 260], [295, 258]], np.float32)
    for box in (flat, tall):
        crop = recognition.crop_box(image, box)
        h, w = crop.shape[:2]
        corners = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
        back = recognition.crop_to_image(corners, box)
        # The crop's corners are the box's, from the one that becomes the crop's top-left.
        start = 1 if recognition.crop_geometry(box)[3] else 0
        assert back == pytest.approx(np.roll(box, -start, axis=0), abs=0.5)


def test_a_drawn_line_gets_its_words_ink_boxes():
    font = ImageFont.truetype(LETTER_FONTS[0], 32)
    line = Image.new("RGB", (400, 60), "white")
    ImageDraw.Draw(line).text((20, 10), "ink", font=font, fill="black")
    crop = np.asarray(line)
    box = np.array([[0, 0], [400, 0], [400, 60], [0, 60]], np.float32)
    ink = Image.new("L", line.size, 0)
    ImageDraw.Draw(ink).text((20, 10), "ink", font=font, fill=255)
    left, top, right, bottom = ink.getbbox()
    # A span a little wider than the word, as the CTC steps give it.
    reading = Reading("ink", 0.9, words=(Span("ink", left - 6, right + 6, 0.9),))
    [word] = words.line_words(crop, box, reading)
    assert word.text == "ink" and word.score == 0.9     # to the pixel (a faint edge may fall out)
    assert word.points == pytest.approx(
        np.array([[left, top], [right, top], [right, bottom], [left, bottom]]), abs=1.0)


def test_words_part_at_the_widest_inkless_gap_between_them():
    ink = np.zeros((48, 200), bool)
    ink[12:36, 10:60] = True            # word one, its last letter wide
    ink[12:36, 64:66] = True            # a speck in the gap
    ink[12:36, 90:150] = True           # word two
    glyphs = (Glyph("a", 2, 2, 0.9), Glyph("b", 4, 4, 0.9), Glyph(" ", 8, 8, 0.9),
              Glyph("c", 12, 12, 0.9), Glyph("d", 15, 15, 0.9))
    crop = np.zeros((48, 200, 3), np.uint8)
    # centres: a 20, b 36 | c 100, d 124: halfway would be 68; the widest gap is 66-90.
    [(_, _, one), (_, _, two)] = words.glyph_spans(glyphs, crop, ink)
    assert one == (4.0, 52.0) and two == (78.0, 148.0)
    [(_, _, one), (_, _, two)] = words.glyph_spans(glyphs, crop, None)
    assert one[1] == 52.0 and two[0] == 76.0



def test_characters_read_in_a_short_crop_s_padding_stay_in_its_box():
    """A crop narrower than the recognizer's narrowest batch (320 columns) is padded; a
    reading of sideways text can put characters in that padding, past the crop's 64 columns
    (english.png turned 270 with orientation=upright answered 502 once): they are placed at
    the box's right edge."""
    crop = np.full((48, 64, 3), 255, np.uint8)
    crop[12:36, 4:30] = 0
    glyphs = (Glyph("a", 1, 1, 0.9), Glyph(" ", 6, 6, 0.9), Glyph("b", 20, 20, 0.9),
              Glyph(" ", 25, 25, 0.9), Glyph("c", 30, 30, 0.9))
    box = np.array([[100, 200], [164, 200], [164, 248], [100, 248]], np.float32)
    found = words.line_words(crop, box, Reading("a b c", 0.9, glyphs=glyphs), True)
    assert [word.text for word in found] == ["a", "b", "c"]
    assert found[0].points.tolist() == [[104, 212], [130, 212], [130, 236], [104, 236]]
    for word in found[1:]:
        assert 100 <= word.points[:, 0].min() <= word.points[:, 0].max() <= 164


def word(text, left, right, top=0.0, bottom=30.0):
    points = np.array([[left, top], [right, top], [right, bottom], [left, bottom]], np.float32)
    characters = tuple((points, c, 0.9) for c in text)
    return words.Word(points, text, 0.9, characters)


def test_a_character_read_twice_where_two_boxes_overlap_is_kept_once():
    # "Desk lamp" | "189." | ".99": the point's ink in both of the last two boxes (3 px).
    found = [[word("Desk", 0, 60), word("lamp", 75, 140)], [word("189.", 250, 311)],
             [word(".99", 308, 348)]]
    texts = ["Desk lamp", "189.", ".99"]
    kept_texts, kept = words.without_repeats([[0, 1, 2]], texts, found)
    assert kept_texts == ["Desk lamp", "189.", "99"]
    assert [w.text for box in kept for w in box] == ["Desk", "lamp", "189.", "99"]
    assert [c[1] for c in kept[2][0].characters] == ["9", "9"]
    assert texts == ["Desk lamp", "189.", ".99"]          # the caller's lists are left alone


def test_words_apart_or_of_other_characters_keep_theirs():
    # The same character a word space apart ("ended" "dogs"), and overlapping boxes whose
    # characters differ ("0." "95").
    found = [[word("ended", 0, 80)], [word("dogs", 90, 150)], [word("0.", 200, 230)],
             [word("95", 222, 260)], [word(".", 300, 305)], [word(".", 303, 308)]]
    texts = ["ended", "dogs", "0.", "95", ".", "."]
    kept_texts, kept = words.without_repeats([[0, 1], [2, 3], [4, 5]], texts, found)
    assert kept_texts == ["ended", "dogs", "0.", "95", ".", ""]
    assert [len(box) for box in kept] == [1, 1, 1, 1, 1, 0]   # a one-character word goes


def test_letters_that_only_touch_or_sit_on_other_rows_are_not_repeats():
    # "com" | "mittee": the two m's touch by a pixel (their characters are 20 px wide); two
    # "1" boxes of one line, one set a line lower, overlap along it but not across.
    found = [[word("com", 0, 60)], [word("mittee", 59, 179)],
             [word("1", 300, 310)], [word("1", 305, 315, top=40, bottom=70)]]
    texts = ["com", "mittee", "1", "1"]
    assert words.without_repeats([[0, 1], [2, 3]], texts, found)[0] == texts
