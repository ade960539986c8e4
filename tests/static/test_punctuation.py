"""A fact or quoted message that ends its own sentence is not followed by the page's full stop."""

from __future__ import annotations

import pytest
from docutils import nodes

from xnnguide.site.directives import doubled_stops

pytestmark = pytest.mark.static


def paragraph(value: str, after: str, kind: str = "xnnguide-fact") -> nodes.paragraph:
    return nodes.paragraph("", "", nodes.Text("The runtime says "), nodes.literal(value, value, classes=[kind]),
                           nodes.Text(after))


@pytest.mark.parametrize("kind", ["xnnguide-fact", "xnnguide-quote"])
def test_a_recorded_sentence_followed_by_a_full_stop_is_found(kind):
    found = doubled_stops(paragraph("Backend X is not registered.", ". Then it stops.", kind))
    assert [literal.astext() for literal in found] == ["Backend X is not registered."]


@pytest.mark.parametrize(("value", "after"), [
    ("Backend X is not registered.", " Then it stops."),  # the quote ends the sentence
    ("0.25 ms", "."),  # a figure inside the page's sentence
    ("Backend X is not registered.", ", it says."),
])
def test_one_full_stop_is_not_reported(value, after):
    assert doubled_stops(paragraph(value, after)) == []


def test_code_the_page_wrote_itself_is_not_reported():
    text = "snippets/<task>/<file>.py:<line>: reader code: ..."
    tree = nodes.paragraph("", "", nodes.literal(text, text), nodes.Text("."))
    assert doubled_stops(tree) == []
