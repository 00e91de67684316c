"""``manage.py evaluate_detection`` on the shared ICDAR 2015 sample through a real Triton."""

import json

import pytest
from django.core.management import CommandError, call_command

from tests.helpers import DATA, IMAGES, reference_boxes
from tests.parity import PARITY_F, parity_f

pytestmark = pytest.mark.quality

GT = DATA / "icdar2015_gt.json"


def test_command_refuses_a_missing_image_folder(tmp_path):
    with pytest.raises(CommandError, match="not found"):
        call_command("evaluate_detection", images=tmp_path, triton_url="localhost:1")


@pytest.mark.triton
def test_served_pipeline_scores_the_reference_hmean(live_triton, tmp_path, capsys):
    out = tmp_path / "eval.json"
    call_command("evaluate_detection", gt=GT, images=IMAGES, long_side=1280, json_path=out)
    result = json.loads(out.read_text())

    total = result["total"]
    assert total["hmean"] >= 0.85
    # The served ensemble finds exactly what the reference pipeline finds.
    assert (total["matched"], total["detections"], total["truths"]) == (7, 8, 8)
    assert total["precision"] == total["recall"] == total["hmean"] == pytest.approx(0.875)
    per_image = {i["image"]: (i["matched"], i["detections"], i["truths"], i["boxes_returned"])
                 for i in result["images"]}
    assert per_image == {"img_1.jpg": (4, 4, 4, 7), "img_2.jpg": (2, 2, 2, 2),
                         "img_3.jpg": (1, 2, 2, 2), "img_4.jpg": (0, 0, 0, 1),
                         "img_5.jpg": (0, 0, 0, 0)}
    assert result["triton_url"] == live_triton.grpc_url
    assert "H-mean 0.8750" in capsys.readouterr().out

    # Parity: the boxes it scored are the reference pipeline's boxes.
    reference = reference_boxes(1280)
    for image in result["images"]:
        assert parity_f(image["boxes"], reference[image["image"]]["boxes"]) >= PARITY_F, \
            image["image"]
