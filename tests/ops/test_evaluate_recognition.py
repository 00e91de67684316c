"""``manage.py evaluate_recognition`` on the shared recognition data through a real Triton."""

import json

import pytest
from django.core.management import CommandError, call_command

from tests.helpers import DATA, IMAGES

pytestmark = pytest.mark.quality


def test_command_refuses_a_missing_ground_truth(tmp_path):
    with pytest.raises(CommandError, match="cannot read the text ground truth"):
        call_command("evaluate_recognition", data=tmp_path, triton_url="localhost:1")


@pytest.mark.triton
def test_served_pipeline_scores_text_words_and_receipts(live_triton, tmp_path, capsys):
    out = tmp_path / "eval.json"
    call_command("evaluate_recognition", data=DATA / "recognition", images=IMAGES,
                 json_path=out)
    result = json.loads(out.read_text(encoding="utf-8"))
    images = result["images"]
    # Measured at the defaults: every word of the complete images read, precision 1.
    assert images["complete"]["f_score"] == pytest.approx(1.0)
    assert images["partial"]["recall"] >= 0.75
    korean = next(row for row in images["per_image"] if row["image"] == "korean.png")
    assert (korean["matched"], korean["expected"], korean["read"]) == (8, 8, 8)
    assert result["words"]["accuracy"] == pytest.approx(0.7)       # 7 of 10 crops
    assert {row["label"] for row in result["words"]["per_word"] if not row["right"]} == \
        {"HOTEL", "ANING"}
    assert result["receipts"]["label_recall"] >= 0.8
    printed = capsys.readouterr().out
    assert "complete images: F 1.000" in printed and "words: 7/10 right" in printed


@pytest.mark.triton
def test_word_crops_go_to_the_newest_recognizer_version_with_its_dictionary(
        live_triton, settings, tmp_path):
    """A version 2 copied into the repository but not loaded: its dictionary is not used to
    decode version 1's classes; the command asks Triton for version 2 and says it failed."""
    repository = tmp_path / "repository"
    for version in ("1", "2"):
        (repository / "recognizer" / version).mkdir(parents=True)
        (repository / "recognizer" / version / "dict.txt").write_text("a\nb\n")
    settings.TRITON_MODEL_REPOSITORY = str(repository)
    data = tmp_path / "recognition"
    data.mkdir()
    (data / "text_gt.json").write_text(json.dumps({"about": "none", "images": {}}))
    (data / "words").symlink_to(DATA / "recognition" / "words")
    with pytest.raises(CommandError, match=r"the recognizer \(version 2\) failed"):
        call_command("evaluate_recognition", data=data, images=IMAGES)
