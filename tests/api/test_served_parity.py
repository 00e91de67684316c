"""Box parity of the served combination (each network in the precision ``auto`` chose on this
CPU) through POST /api/ocr at the default working size, where quality is judged."""

import pytest

from tests.helpers import (IMAGE_NAMES, IMAGES, UNSEEN, UNSEEN_NAMES, reference_boxes,
                           unseen_reference)
from tests.parity import PARITY_F, parity_f

from .test_ocr import box_points, post_image

pytestmark = [pytest.mark.django_db, pytest.mark.triton, pytest.mark.quality]
REFERENCE_1280 = reference_boxes(1280)
UNSEEN_1280 = unseen_reference()


@pytest.mark.parametrize("path", [IMAGES / name for name in IMAGE_NAMES]
                         + [UNSEEN / name for name in UNSEEN_NAMES], ids=lambda path: path.name)
def test_boxes_match_the_reference_at_1280(api_client, live_triton, path):
    """The served combination (each network in the precision auto chose on this CPU) at the
    default long side, on the shared images and on ICDAR images no calibration, validation or
    tuning saw (small words: the ones a reduced precision loses first)."""
    response = post_image(api_client, path)
    assert response.status_code == 200, response.json()
    body = response.json()
    reference = (REFERENCE_1280 if path.parent == IMAGES else UNSEEN_1280)[path.name]
    assert (body["image"]["width"], body["image"]["height"]) == \
        (reference["width"], reference["height"])
    assert len(body["boxes"]) == len(reference["boxes"])
    assert parity_f(box_points(body), reference["boxes"]) >= PARITY_F
