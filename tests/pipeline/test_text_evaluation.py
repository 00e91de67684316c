"""The bag-of-tokens text score (ocr_pipeline.text_evaluation), on the issue's examples."""

import pytest

from ocr_pipeline.text_evaluation import load_text_truth, normalise_word, score_text, tokens
from tests.helpers import DATA


@pytest.mark.parametrize("text, expected", [
    ("NOTHING?", ["nothing"]),
    ("[02-03]", ["0203"]),
    ("서울 Seoul", ["서", "울", "seoul"]),
    ("東京タワー 333m", ["東", "京", "タ", "ワ", "ー", "333m"]),
    ("ＡＢＣ", ["abc"]),                                    # NFKC: full-width letters
    ("TÜRKİYE", ["türkiye"]),              # the dot above İ is not a letter
    ("...  --", []),
])
def test_tokens(text, expected):
    assert tokens(text) == expected


def test_true_positives_are_a_multiset_intersection():
    score = score_text("the the cat 川", ["the cat", "sat"])
    assert (score.matched, score.read, score.expected) == (2, 4, 3)
    assert score.precision == pytest.approx(0.5) and score.recall == pytest.approx(2 / 3)
    assert score.f_score == pytest.approx(4 / 7)


def test_the_shared_ground_truth_loads():
    truths = {t.image: t for t in load_text_truth(DATA / "recognition" / "text_gt.json")}
    assert truths["korean.png"].complete and truths["english.png"].complete
    assert not truths["idcard.png"].complete
    assert truths["korean.png"].words == ["서울", "Seoul", "평양", "Pyeongyang", "56Km", "205Km"]


def test_words_compare_without_case_spaces_or_punctuation():
    assert normalise_word("THANK YOU!") == normalise_word("thankyou") == "thankyou"
