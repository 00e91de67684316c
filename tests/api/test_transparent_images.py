"""Text on a transparent background is read whatever its colour (a dark-mode screenshot:
white text on transparency), end to end through Triton."""

import pytest

from tests.helpers import DATA

pytestmark = [pytest.mark.django_db, pytest.mark.triton]


@pytest.mark.parametrize("name", ["white_font_color_transparent.png",
                                  "black_font_color_transparent.png"])
def test_text_on_transparency_is_read_in_either_colour(api_client, live_triton, name):
    response = api_client.post("/api/ocr", data=(DATA / "transparent" / name).read_bytes(),
                               content_type="image/png")
    assert response.status_code == 200
    body = response.json()
    assert body["text"] == "我是中国人"              # RapidOCR's own test expects the same
    assert body["image"] == {"width": 1890, "height": 503, "format": "PNG", "angle": 0}
