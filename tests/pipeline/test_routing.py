"""Which recognizer reads which lines (ocr_pipeline.routing)."""

from ocr_contract.languages import parse
from ocr_pipeline import routing
from ocr_pipeline.recognition import Reading


def test_routes_from_language_codes():
    assert routing.route(parse("auto")) == routing.Route("ppocr", auto=True)
    assert routing.route(parse("en,fr")) == routing.Route("ppocr")
    assert routing.route(parse("ko")) == routing.Route("tesseract", "kor+eng")
    assert routing.route(parse("ko,en,th")) == routing.Route("tesseract", "kor+tha+eng")
    assert routing.route(parse("tr")) == routing.Route("tesseract", "tur+eng")


def test_script_share_counts_letters_only():
    assert routing.script_share("서울 56Km", "HANGUL") == 0.5
    assert routing.script_share("2050", "HANGUL") == 0.0


def test_second_opinion_replaces_doubtful_lines_with_the_winning_script():
    readings = [Reading("川", 0.25), Reading("Seoul", 0.99), Reading("", 0.0)]
    asked = []

    def read_with(indices, languages):
        asked.append((indices, languages))
        if languages == "kor+eng":
            return [Reading("서울", 0.9), Reading("평양", 0.8)]
        if languages == "tha+eng":
            return [Reading("ธชีข", 0.95), Reading("Nz", 0.9)]   # half Thai: not its script
        return [Reading("", 0.0), Reading("", 0.0)]

    improved = routing.second_opinion(readings, read_with)
    assert [r.text for r in improved] == ["서울", "Seoul", "평양"]
    # Turkish has no script of its own to win by here (it is recognised by its letters).
    assert {languages for _, languages in asked} == {"kor+eng", "tha+eng", "hin+eng", "rus+eng"}
    assert all(indices == [0, 2] for indices, _ in asked)


def test_second_opinion_keeps_ppocr_when_no_script_is_confident():
    readings = [Reading("dsluh", 0.47), Reading("Kimlik", 0.98)]
    unchanged = routing.second_opinion(readings, lambda indices, languages: [Reading("서", 0.55)])
    assert unchanged == readings
    confident = [Reading("Seoul", 0.99)]
    assert routing.second_opinion(confident, lambda *_: 1 / 0) == confident   # never asked


def test_a_page_showing_turkish_letters_is_read_again_whole_in_turkish():
    # PP-OCR reads Doğum and KIRANŞAL with their letters but Soyadı as Soyadi.
    readings = [Reading("Soyadi / Surname", 0.97), Reading("KIRANŞAL", 0.95),
                Reading("Doğum Tarihi", 0.96)]
    asked = []

    def read_with(indices, languages):
        asked.append((indices, languages))
        return [Reading("Soyadı / Surname", 0.9), Reading("KIRANŞAL", 0.9),
                Reading("Doğum Tarihi", 0.9)]

    improved = routing.second_opinion(readings, read_with)
    assert asked == [([0, 1, 2], "tur+eng")]
    assert [r.text for r in improved] == ["Soyadı / Surname", "KIRANŞAL", "Doğum Tarihi"]


def test_one_turkish_letter_or_one_turkish_name_in_a_long_page_is_not_enough():
    readings = [Reading("Doğum", 0.96), Reading("Seoul", 0.99)]
    assert routing.language_by_letters(readings) is None
    assert routing.second_opinion(readings, lambda *_: 1 / 0) == readings   # never asked
    assert routing.language_by_letters([Reading("Uyruğu ŞAHIN", 0.9)]).code == "tr"
    # Two letters among 218: under 1 %.
    german = [Reading("Das Spiel in Beşiktaş", 0.97)] + [Reading("a" * 100, 0.9)] * 2
    assert routing.language_by_letters(german) is None
    assert routing.language_by_letters(german[:2]).code == "tr"   # 2 of 118 letters
