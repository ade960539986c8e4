"""The gallery's cards: each says what its recipe does; only a recipe that draws a figure shows an image."""

from __future__ import annotations

import pytest
from sphinx_gallery.backreferences import THUMBNAIL_TEMPLATE

from xnnguide.site.gallery_pages import CARD_CHARACTERS, cards, first_sentence

pytestmark = pytest.mark.static


def card(name: str, intro: str) -> str:
    # A card as the installed sphinx-gallery writes it, so that a change of its template fails here.
    return THUMBNAIL_TEMPLATE.format(intro=intro, thumbnail=f"gallery/t/images/thumb/sphx_glr_{name}_thumb.png",
                                     title=name.title(), doc_name=f"/gallery/t/{name}", tags="")


def test_a_card_shows_its_first_sentence_and_an_image_only_for_a_figure():
    page = card("plain", "Lowers a model &amp; runs it. More detail.") + card("chart", "Draws a chart.")
    finished = cards(page, has_figure=lambda doc: doc.endswith("/chart"))
    plain, chart = finished.split('<div class="sphx-glr-thumbcontainer"')[1:]
    assert "sphx_glr_plain_thumb.png" not in plain and "sphx_glr_chart_thumb.png" in chart
    assert '<div class="xnnguide-card-intro">Lowers a model &amp; runs it.</div>' in plain
    assert '<div class="xnnguide-card-intro">Draws a chart.</div>' in chart
    assert finished.count(":doc:`/gallery/t/") == 2  # the links stay


def test_a_long_first_sentence_is_cut_at_a_word():
    sentence = "This recipe takes " + "a rather long model name " * 10 + "to a file."
    shown = first_sentence(f"{sentence} Then more.")
    assert len(shown) <= CARD_CHARACTERS and shown.endswith("…") and sentence.startswith(shown[:-1])
    assert first_sentence("Uses ``torch.export`` first. Then more.") == "Uses torch.export first."
