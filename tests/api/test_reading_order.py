"""Reading order through POST /api/ocr (the real embedded Triton): a page photographed a few
degrees off level, upright or turned, answers its lines whole and in the order they were
written (ocr_pipeline.reading_order levels the boxes before grouping them); a table's rows
come back as lines, each with its own single-digit quantity (ocr_pipeline.boxes cuts a
column of cells that the link refiner linked into one box); a page of two columns of prose
answers the left column's lines, then the right column's (ocr_pipeline.columns)."""

import io

import pytest
from PIL import Image
from ocr_pipeline.text_evaluation import tokens

from tests.helpers import pdftotext
from tests.image_factory import (LETTER_FONTS, columns_page, encode, invoice_page, letter_lines,
                                 letter_page, table_page)

pytestmark = [pytest.mark.django_db, pytest.mark.triton]


@pytest.mark.parametrize("angle, tilt", [(0, 4.0), (0, -4.0), (90, 3.0)])
def test_a_tilted_pages_lines_come_back_whole_and_in_order(api_client, live_triton, angle,
                                                          tilt):
    image, words = letter_page(angle=angle, skew=tilt)
    # At the default working size: a whole line must be read right to be found whole.
    response = api_client.post("/api/ocr", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["image"]["angle"] == angle
    drawn = [" ".join(line) for line in letter_lines(words)]
    assert len(drawn) == 5
    assert [line["text"] for line in body["lines"]] == drawn
    assert body["text"].splitlines() == drawn


@pytest.mark.parametrize("seed, tilt, angle", [
    (50, 0.0, 0), (51, 3.0, 0), (52, -2.0, 0), (53, 0.0, 90),
    # Rows 1.3 lines apart, whose quantities nearly touch: two rows' digits were one box
    # ("45", "47", "57") and their rows one line before ocr_pipeline.boxes.PageRows.
    (81, 0.0, 0), (85, -2.0, 0), (87, 2.0, 0),
    # Tilted 3-4°, a quantity lost before rows held faint characters and were taken whole:
    # with FP32 score maps a faint "7" and "6" (region score peaking at 0.6-0.69) and a "4"
    # joined to the "9" below; served INT8 on an AMX Xeon, the "7".
    (103, -4.0, 0), (120, 4.0, 0), (134, 3.0, 0)])
def test_a_tables_rows_come_back_as_lines_with_their_quantities(api_client, live_triton, seed,
                                                               tilt, angle):
    image, words = table_page(seed=seed, skew=tilt, angle=angle)
    response = api_client.post("/api/ocr", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    rows = [" ".join(line) for line in letter_lines(words)]
    assert len(rows) == 7 and rows[0] == "Description Qty Unit price Amount"
    assert body["text"].splitlines() == rows
    # Each quantity is a box of its own, in its row's line (the recognizer read it upright).
    quantities = [line[-3] for line in letter_lines(words)[1:]]
    assert [line["words"][-3]["text"] for line in body["lines"][1:]] == quantities


@pytest.mark.parametrize("layout, tilt", [
    # The first user's own invoice (DejaVu Sans 32 px, rows 70 px apart): its "1" above its "7"
    # came back as one box, "17", and their rows as one line.
    ({}, 3.0), ({}, -1.0),
    # Tilted 1 degree, the lines' rectangles came out level (a tilt of 0.0) and the rows split
    # or merged; and a "1" whose score runs into the "7" below it to 3 of 5 pixels.
    (dict(lefts=(60, 842, 1173, 1570), font_path=LETTER_FONTS[1], size=40, pitch=64), 1.0),
    (dict(lefts=(60, 1195, 1531, 1872), width=2400, font_path=LETTER_FONTS[2], size=28,
          pitch=53), -1.0)])
def test_an_invoice_laid_out_by_hand_reads_its_rows(api_client, live_triton, layout, tilt):
    """Left-aligned columns, rows 1.6-2.2 lines apart, tilted to the nearest pixel."""
    image, words = invoice_page(skew=tilt, **layout)
    response = api_client.post("/api/ocr", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    rows = [" ".join(line) for line in letter_lines(words)]
    assert rows[4:] == ["Service fee 1 60.00 60.00", "Spare fuse pack 7 1.10 7.70"]
    answered = response.json()["text"].splitlines()
    # Each row's numbers exactly (where two rows' digits ran into one box), its words as
    # tokens; the heading's first aside (28-px print at 2,400 px read "Descríption").
    assert [line.split()[-3:] for line in answered] == [row.split()[-3:] for row in rows]
    assert [tokens(line) for line in answered[1:]] == [tokens(row) for row in rows[1:]]
    assert tokens(answered[0])[1:] == ["qty", "unit", "price", "amount"]


@pytest.mark.parametrize("seed, tilt, angle", [(60, 0.0, 0), (61, 3.0, 0), (62, -2.0, 90)])
def test_two_columns_come_back_one_after_the_other(api_client, live_triton, seed, tilt, angle):
    image, words = columns_page(seed=seed, skew=tilt, angle=angle)
    response = api_client.post("/api/ocr", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    lines = [" ".join(line) for line in letter_lines(words)]
    assert lines[0] == "News from the hall" and lines[-1] == "Page 4 of the spring newsletter"
    # Line by line, the same words (case and punctuation aside: a misread capital is not an
    # order's fault).
    answered = response.json()["text"].splitlines()
    assert [tokens(line) for line in answered] == [tokens(line) for line in lines]


@pytest.mark.parametrize("seed, tilt", [
    (89, 2.0), (90, -2.0),
    # Level: from word to word, capitals and descenders read as a tilt of 0.9-1.1 degrees,
    # which carried each row into the next (2 and 4 lines came back).
    (32, 0.0), (55, 0.0)])
def test_a_tables_word_boxes_come_back_in_its_rows(api_client, live_triton, seed, tilt):
    """refine=false: a box per word, each level however the page lies; the page is levelled
    where the words' centres line up (ocr_pipeline.reading_order.text_tilt), so each row is
    one line. Compared without spaces: CRAFT's affinity parts a number at its point
    ("4. 50")."""
    image, words = table_page(seed=seed, skew=tilt)
    response = api_client.post("/api/ocr?refine=false", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    rows = [" ".join(line) for line in letter_lines(words)]
    assert len(rows) == 7
    assert [line.replace(" ", "") for line in response.json()["text"].splitlines()] == \
        [row.replace(" ", "") for row in rows]


@pytest.mark.parametrize("seed, tilt", [(54, -4.0), (55, 3.0)])
def test_a_tilted_tables_searchable_pdf_reads_its_rows(api_client, live_triton, tmp_path, seed,
                                                       tilt):
    """pdftotext -layout reads the text layer by baselines: each row's cells on one, the
    rows in order, though the page's rows rise across it by more than their spacing."""
    image, words = table_page(seed=seed, skew=tilt)
    response = api_client.post("/api/ocr?format=pdf", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    got = [tokens(line) for line in pdftotext(response.content, tmp_path, "-layout")
           .splitlines() if line.strip()]
    assert got == [tokens(" ".join(line)) for line in letter_lines(words)]


def test_a_point_two_word_boxes_both_hold_is_read_once(api_client, live_triton):
    """refine=false (CRAFT's affinity) parts "189.99" into "189." and ".99" on this table; the
    point both crops read comes back once (ocr_pipeline.words.without_repeats)."""
    image, words = table_page(seed=301)
    response = api_client.post("/api/ocr?refine=false", {"image": io.BytesIO(encode(image))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    lamp = next(line["text"] for line in response.json()["lines"]
                if line["text"].startswith("Desk"))
    assert ["189.99", "1709.91"] == [" ".join(line) for line in letter_lines(words)
                                     if line[0] == "Desk"][0].split()[-2:]
    assert "189.99" in lamp.replace(" ", "") and lamp.count(".") == 2, lamp
    words_read = [w["text"] for line in response.json()["lines"] for w in line["words"]]
    assert sum(w.startswith(".") for w in words_read) == 0


@pytest.mark.parametrize("seed", [70, 71])
def test_small_print_finds_its_single_digits_at_the_defaults(api_client, live_triton, seed):
    """A 300-dpi A4 invoice in 7-8 pt type: at the default 1280 its quantity column's single
    digits fall under CRAFT's noise floor; the page is found again larger
    (ocr_pipeline.imaging.small_print_side) and every row keeps its quantity."""
    table, words = table_page(seed=seed, width=2480)
    page = Image.new("RGB", (2480, 3508), "white")
    page.paste(table, (0, 300))
    response = api_client.post("/api/ocr", {"image": io.BytesIO(encode(page))},
                               format="multipart")
    assert response.status_code == 200, response.content[:500]
    rows = [" ".join(line) for line in letter_lines(words)]
    assert [tokens(line) for line in response.json()["text"].splitlines()] == \
        [tokens(line) for line in rows]
