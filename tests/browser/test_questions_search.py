"""The site's search finds an answer of the questions page by the words of its question: three questions, typed
into the search box as a reader would."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.build

#: Words of a question on docs/help/questions.md, and the recipe page that answers it.
QUESTIONS = {
    "LSTM GRU": "gallery/lowering/lower_lstm_and_gru_layers.html",
    "Conv2d padding same": "gallery/quantization/quantize_conv2d_with_padding_same.html",
    "random inputs real": "gallery/troubleshooting/check_a_pte_on_real_inputs_not_random_ones.html",
}


@pytest.mark.parametrize("words", QUESTIONS)
def test_search_finds_the_questions_page_and_the_answer_by_the_question_words(tab, words):
    tab.goto("help/questions.html")
    page = tab.page
    page.click("button.search-button-field")
    page.wait_for_function("document.activeElement && document.activeElement.name === 'q'")
    page.keyboard.insert_text(words)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_selector("#search-results li a", timeout=20_000)
    found = {link.split("#")[0].split("?")[0]
             for link in page.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")}
    for expected in ("help/questions.html", QUESTIONS[words]):
        assert any(link.endswith("/" + expected) for link in found), (words, expected, sorted(found))
    assert not tab.console_errors, tab.console_errors
