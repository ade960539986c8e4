"""Paths shared by the tests, and the marker for tests that need a build."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SNIPPETS = ROOT / "snippets"
GALLERY = DOCS / "gallery"
BUILD = ROOT / "_build"
HTML = BUILD / "html"


def recipe(stem: str) -> Path:
    """The recipe file named *stem*, in whichever task folder of snippets/ it sits."""
    found = sorted(SNIPPETS.rglob(f"{stem}.py"))
    assert len(found) == 1, f"expected one recipe {stem}.py under {SNIPPETS}, found {found}"
    return found[0]


def _soup(page: Path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def _text(element) -> str:
    return " ".join(element.get_text(" ").split())


def table_rows(page: Path) -> list[list[str]]:
    """The cells of every table row of a built page, as their whitespace-folded text."""
    return [[_text(cell) for cell in row.find_all(["td", "th"])] for row in _soup(page).find_all("tr")]


def shown_facts(page: Path) -> list[str]:
    """The text of every figure a page shows through the ``{fact}`` role, in order."""
    return [_text(element) for element in _soup(page).select(".xnnguide-fact")]


@pytest.fixture(scope="session")
def built_site() -> Path:
    """The HTML folder of the last build; fails (not skips) when it is missing."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML} has no index.html: run `make html` (or `make test`) first")
    return HTML
