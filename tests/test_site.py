"""The built pages show the figures the recipes measured, and their stamps."""

from __future__ import annotations

import html
import re

import pytest

from conftest import GALLERY, SNIPPETS
from xnnguide import facts
from xnnguide.sphinxext import records_dir




def page_text(path):
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


@pytest.mark.build
def test_overview_shows_every_figure_as_measured(built_site):
    recorded = facts.load(records_dir(GALLERY) / "facts" / "lower_mobilenet_v2_fp32.json")
    assert recorded, "the MobileNet V2 recipe recorded no facts"
    text = page_text(built_site / "overview.html")
    for key in ("delegated_nodes", "non_delegated_nodes", "pte_size_bytes", "max_abs_error", "speedup"):
        assert recorded[key]["display"] in text, f"overview does not show {key} = {recorded[key]['display']}"
    for row in recorded["latency"]["rows"]:
        assert all(cell in text for cell in row), f"latency row missing from overview: {row}"


@pytest.mark.build
def test_overview_and_every_gallery_page_carry_a_stamp(built_site):
    pages = [built_site / "overview.html"] + [
        built_site / "gallery" / f"{source.stem}.html" for source in SNIPPETS.glob("*.py")
    ]
    for page in pages:
        text = page_text(page)
        match = re.search(r"Verified by running snippets/\w+\.py on (\d{4}-\d\d-\d\d).*?with torch ([\d.]+), "
                          r"executorch ([\d.]+), torchao ([\d.]+), torchvision ([\d.]+)", text)
        assert match, f"{page.name} has no verified stamp"


@pytest.mark.build
def test_overview_code_is_the_recipe_code(built_site):
    # The walkthrough's code blocks are literal includes of the recipe.
    text = page_text(built_site / "overview.html")
    source = (SNIPPETS / "lower_mobilenet_v2_fp32.py").read_text()
    lowering = source.split("# [start lower]\n")[1].split("# [end lower]")[0]
    for line in lowering.strip().splitlines():
        assert line.strip() in text, f"overview lacks recipe line: {line!r}"


FACT_REFERENCE = re.compile(r"\{fact\}`([A-Za-z0-9_]+)/|```\{fact-table\}\s+([A-Za-z0-9_]+)/")
STAMP = re.compile(r"```\{verified-stamp\}\s+([A-Za-z0-9_]+)")


def test_every_page_quoting_a_recipe_carries_its_stamp():
    # Static: a page that shows figures from a recipe says when and with
    # what that recipe was verified.
    from conftest import DOCS

    missing = []
    for page in sorted(DOCS.rglob("*.md")):
        if "gallery" in page.relative_to(DOCS).parts:
            continue
        text = page.read_text(encoding="utf-8")
        quoted = {a or b for a, b in FACT_REFERENCE.findall(text)}
        stamped = set(STAMP.findall(text))
        missing += [f"{page.relative_to(DOCS)}: quotes {name} without a verified-stamp" for name in quoted - stamped]
    assert not missing, "\n".join(missing)
