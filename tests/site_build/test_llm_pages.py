"""The language-model recipes: the tiny Llama and the decoder built by hand learn the same text with the same
loop, so what the guide says of one holds of the other."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.build
def test_the_two_llm_recipes_learn_the_same_text(built_site):
    from conftest import GALLERY
    from xnnguide.core import facts

    official = facts.load(GALLERY / "_records" / "facts" / "train_a_tiny_llama.json")
    by_hand = facts.load(GALLERY / "_records" / "facts" / "export_char_llm_with_kv_cache.json")
    assert official["modules"]["value"] == by_hand["modules"]["value"]


def training_loop(source: Path) -> str:
    """The lines of a recipe's training loop: from ``for step in range(STEPS):`` to ``schedule.step()``."""
    text = source.read_text(encoding="utf-8")
    start = text.index("for step in range(STEPS):")
    return text[start : text.index("    schedule.step()\n", start)]


def test_the_two_llm_recipes_train_with_the_same_loop():
    # Each download must run alone, so each recipe keeps its own copy; the copies must not drift apart, or the
    # comparison table of the language-model page would compare two ways of training as well as two models.
    snippets = ROOT / "snippets" / "llm"
    official = training_loop(snippets / "train_a_tiny_llama.py")
    by_hand = training_loop(snippets / "export_char_llm_with_kv_cache.py")
    assert official.replace("train_ids", "train_data") == by_hand
