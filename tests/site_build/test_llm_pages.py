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


GUIDE = ROOT / "docs" / "guides" / "llm.md"
EXPORT_RECIPE = ROOT / "snippets" / "llm" / "export_a_llama_with_export_llm.py"


def undefined_names(code: str) -> list[str]:
    """pyflakes' undefined names in *code*: what a reader who pasted it would meet as a NameError."""
    import io

    from pyflakes import api, reporter

    out = io.StringIO()
    api.check(code, "pasted", reporter.Reporter(out, out))
    return [line for line in out.getvalue().splitlines() if "undefined name" in line]


def test_the_guides_generate_block_defines_every_name_it_uses():
    # The guide shows the export recipe's generate region on its own (the tiny model's export is a command):
    # pasted, it must not need a name of the export block the page does not show.
    from conftest import pasted_in_page_order

    code, sources = pasted_in_page_order(GUIDE, EXPORT_RECIPE)
    assert sources == {EXPORT_RECIPE} and "TextLLMRunner(" in code, sources
    assert undefined_names(code) == []


def test_the_undefined_name_check_finds_a_name_the_generate_block_lost():
    from conftest import pasted_in_page_order

    code, _ = pasted_in_page_order(GUIDE, EXPORT_RECIPE)
    greedy_line = next(line for line in code.splitlines() if line.startswith("greedy = "))
    assert any("'greedy'" in line for line in undefined_names(code.replace(greedy_line, "")))


def undeclared_writers(source: Path) -> list[str]:
    """The recipes whose ``tiny_llama/`` files *source* makes sure of (``shared_files.ensure``) and does not declare
    with ``# xnnguide_depends_on``."""
    import re

    from xnnguide.core.recipes import declared_files

    text = source.read_text(encoding="utf-8")
    ensured = {name for call in re.findall(r"shared_files\.ensure\(([^)]*)\)", text)
               for name in re.findall(r"[\"']([\w.-]+\.py)[\"']", call)}
    return sorted(ensured - {path.name for path in declared_files(source)})


def test_every_llm_recipe_declares_the_recipes_whose_files_it_reads():
    # Declared, a writer runs before its readers in their unit of work, and ensure() finds its files made; left
    # out, the first reader to run makes them again in a subprocess (training the tiny Llama twice per build).
    readers = [source for source in sorted((ROOT / "snippets" / "llm").glob("*.py"))
               if "shared_files.ensure(" in source.read_text(encoding="utf-8")]
    assert len(readers) >= 9, readers
    assert {source.name: undeclared_writers(source) for source in readers
            if undeclared_writers(source)} == {}


def test_the_declaration_check_finds_a_writer_left_out(tmp_path):
    reader = tmp_path / "reader.py"
    reader.write_text('shared_files.ensure("tiny_llama", "train_a_tiny_llama.py", "export_a.py")\n'
                      "# xnnguide_depends_on = train_a_tiny_llama.py\n", encoding="utf-8")
    assert undeclared_writers(reader) == ["export_a.py"]
