"""The language-model recipes: the tiny Llama and the decoder built by hand learn the same text with the same
loop, so what the guide says of one holds of the other."""

from __future__ import annotations

from pathlib import Path

import pytest

<<<<<<< HEAD:tests/test_llm_pages.py
ROOT = Path(__file__).resolve().parents[1]
=======
ROOT = Path(__file__).resolve().parents[2]
AOT_PAGE = ROOT / "docs" / "guides" / "aot_compiler.md"
TABLE_HEADER = "| This compiler | `export_llm` |"


def mapping_rows(page: str) -> list[tuple[str, str]]:
    """The (ours, export_llm) cells of the page's option table."""
    lines = page.splitlines()
    start = lines.index(TABLE_HEADER) + 2  # the header, then the |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        ours, theirs = (cell.strip() for cell in line.strip("|").split("|"))
        rows.append((ours, theirs))
    return rows


def unknown_llm_config_keys(cells: list[str]) -> list[str]:
    """The ``section.field`` keys in *cells* that the installed ``LlmConfig`` does not have."""
    from executorch.extension.llm.export.config.llm_config import LlmConfig

    config, unknown = LlmConfig(), []
    for cell in cells:
        for key in re.findall(r"`([a-z_]+\.[a-z_]+)(?:=[^`]*)?`", cell):
            section, field = key.split(".")
            if not hasattr(getattr(config, section, None), field):
                unknown.append(key)
    return unknown


def test_every_export_llm_key_in_the_table_is_a_field_of_the_installed_llm_config():
    rows = mapping_rows(AOT_PAGE.read_text(encoding="utf-8"))
    assert len(rows) >= 8, rows
    keys = [key for _, theirs in rows for key in re.findall(r"`([a-z_]+\.[a-z_]+)", theirs)]
    assert len(keys) >= 10, keys
    assert unknown_llm_config_keys([theirs for _, theirs in rows]) == []


def test_the_key_check_fails_on_a_key_llm_config_does_not_have():
    assert unknown_llm_config_keys(["`export.max_seq_len=64`", "`model.use_kv_cache=true`"]) == ["export.max_seq_len"]


def test_every_option_of_ours_in_the_table_is_one_our_compiler_takes():
    from xnnguide.tools import aot_compiler

    ours = {option for action in aot_compiler.build_parser()._actions for option in action.option_strings}
    named = [option for cell, _ in mapping_rows(AOT_PAGE.read_text(encoding="utf-8"))
             for option in re.findall(r"`(--[a-z-]+)", cell)]
    assert len(named) >= 5 and set(named) <= ours, set(named) - ours


def test_the_group_sizes_in_the_table_are_those_our_8da4w_uses():
    from xnnguide.core.schemes import quantize_8da4w

    group_size = inspect.signature(quantize_8da4w).parameters["group_size"].default
    (row,) = [theirs for ours, theirs in mapping_rows(AOT_PAGE.read_text(encoding="utf-8")) if "--quantize 8da4w" in ours]
    assert f"quantization.group_size={group_size}`" in row and f"quantization.embedding_quantize=4,{group_size}`" in row
>>>>>>> h-run:tests/site_build/test_llm_pages.py


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
