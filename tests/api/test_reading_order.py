"""Reading order through POST /api/ocr (the real embedded Triton): a page photographed a few
degrees off level, upright or turned, answers its lines whole and in the order they were
written (ocr_pipeline.reading_order levels the boxes before grouping them)."""

import io

import pytest

from tests.image_factory import encode, letter_lines, letter_page

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
