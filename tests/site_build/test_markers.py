"""Readers see no region marker: not on a recipe's page, not in its downloads."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from conftest import SNIPPETS, soup
from xnnguide.core.recipes import recipe_files

MARKER = re.compile(r"^\s*# \[(?:start|end|gallery-only) [^\]]*\]\s*$", re.MULTILINE)


def marker_lines(text: str) -> list[str]:
    return [match.group(0).strip() for match in MARKER.finditer(text)]


def downloads(page):
    links = {a["href"] for a in soup(page).find_all("a", href=True) if "_downloads/" in a["href"]}
    for link in sorted(links):
        path = page.parent / link
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                yield from ((f"{link}!{name}", archive.read(name).decode()) for name in archive.namelist())
        elif path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            yield link, "\n".join("".join(cell["source"]) for cell in cells)
        else:
            yield link, path.read_text(encoding="utf-8")


@pytest.mark.build
def test_no_recipe_page_or_download_shows_a_marker(built_site):
    leaks, pages = [], 0
    for source in recipe_files(SNIPPETS):
        page = built_site / "gallery" / source.relative_to(SNIPPETS).with_suffix(".html")
        code = "\n".join(pre.get_text() for pre in soup(page).select("div.highlight pre"))
        leaks += [f"{page.relative_to(built_site)}: {line}" for line in marker_lines(code)]
        files = list(downloads(page))
        assert {name.rsplit(".", 1)[-1] for name, _ in files} >= {"py", "ipynb"}, f"{page.name}: no downloads"
        leaks += [f"{page.relative_to(built_site)} -> {name}: {line}" for name, text in files
                  for line in marker_lines(text)]
        pages += 1
    assert pages > 10 and any(marker_lines(s.read_text(encoding="utf-8")) for s in recipe_files(SNIPPETS))
    assert not leaks, f"{len(leaks)} marker line(s) readers see:\n" + "\n".join(leaks)


@pytest.mark.build
def test_the_mobilenet_page_and_downloads_are_checked(built_site):
    page = built_site / "gallery" / "lowering" / "lower_mobilenet_v2_fp32.html"
    code = "\n".join(pre.get_text() for pre in soup(page).select("div.highlight pre"))
    assert "to_edge_transform_and_lower(" in code and not marker_lines(code)
    files = dict(downloads(page))
    assert len(files) >= 4 and not [name for name, text in files.items() if marker_lines(text)]
