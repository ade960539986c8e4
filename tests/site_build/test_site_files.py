"""The built site's files: links between pages, downloads, thumbnails, the diagram."""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import DOCS, GALLERY, SNIPPETS, soup, statements

from xnnguide.core.reader_copy import reader_source
from xnnguide.core.recipes import recipe_files

#: Lines that are the site's, not the reader's.
SITE_LINES = re.compile(r"xnnguide|sphinx_gallery_(?:start|end)_ignore|# \[(?:start|end) ")

pytestmark = pytest.mark.build


@dataclass
class Links:
    """What a page links to (``href`` and ``src``), and the anchors it defines (``id`` and ``name``)."""

    links: list[str]
    ids: set[str]


def parse(path: Path) -> Links:
    page = soup(path)
    links = [element[name] for name in ("href", "src") for element in page.find_all(attrs={name: True})
             if element[name] and not (element.name == "a" and name == "src")]
    ids = {element[name] for name in ("id", "name") for element in page.find_all(attrs={name: True}) if element[name]}
    return Links(links, ids)


def test_every_internal_link_and_anchor_resolves(built_site):
    # Pages only: _static holds theme templates (with Jinja in their links), not pages.
    pages = {path: parse(path) for path in built_site.rglob("*.html")
             if path.relative_to(built_site).parts[0] not in ("_static", "_sources", "_downloads")}
    problems = []
    for path, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{path.relative_to(built_site)}: {link} -> no such file")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{path.relative_to(built_site)}: {link} -> no anchor #{parts.fragment}")
    assert len(pages) > 5
    assert not problems, "\n".join(problems)


def test_every_recipe_page_offers_the_reader_copy_as_py_ipynb_and_zip(built_site):
    # What a reader downloads is the recipe without the site's own lines:
    # no ignore block, no region marker, no xnnguide (xnnguide.doccheck.reader_code).
    for source in recipe_files(SNIPPETS):
        page = built_site / "gallery" / source.relative_to(SNIPPETS).with_suffix(".html")
        links = [link for link in parse(page).links if "_downloads/" in link]
        found = {suffix: [link for link in links if link.endswith(f"/{source.stem}{suffix}")]
                 for suffix in (".py", ".ipynb", ".zip")}
        assert all(found.values()), f"{page.name}: download links {links}"
        expected = reader_source(source.read_text(encoding="utf-8"), str(source))
        assert (page.parent / found[".py"][0]).read_text(encoding="utf-8") == expected, (
            f"{found['.py'][0]} is not the reader copy of {source}")
        notebook = json.loads((page.parent / found[".ipynb"][0]).read_text(encoding="utf-8"))
        assert notebook["nbformat"] == 4, f"{found['.ipynb'][0]} is not a notebook"
        code = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
        assert code, f"{found['.ipynb'][0]} has no code"
        leaks = [cell for cell in code if SITE_LINES.search(cell)]
        assert not leaks, f"{found['.ipynb'][0]} carries the site's own lines:\n{leaks[0]}"
        # Statement for statement the reader copy, so the one notebook that runs (test_reader_runs.py) speaks for all.
        assert statements("\n".join(code)) == statements(expected), (
            f"{found['.ipynb'][0]}'s code is not the reader copy of {source}")
        with zipfile.ZipFile(page.parent / found[".zip"][0]) as archive:
            assert archive.read(source.name).decode() == expected, f"{found['.zip'][0]} holds another {source.name}"
            assert not SITE_LINES.search(archive.read(f"{source.stem}.ipynb").decode())


def test_a_recipe_plot_makes_a_gallery_thumbnail(built_site):
    def images(source):  # sphinx-gallery keeps a subsection's images in its own folder
        return GALLERY / source.parent.relative_to(SNIPPETS) / "images"

    recipes = recipe_files(SNIPPETS)
    with_figure = [source for source in recipes if (images(source) / f"sphx_glr_{source.stem}_001.png").is_file()]
    without_figure = [source for source in recipes if source not in with_figure]
    assert with_figure, "no recipe draws a figure, so every thumbnail is the placeholder"
    placeholders = {(images(source) / "thumb" / f"sphx_glr_{source.stem}_thumb.png").read_bytes()
                    for source in without_figure}
    index = (built_site / "gallery" / "index.html").read_text(encoding="utf-8")
    for source in with_figure:
        thumb = (images(source) / "thumb" / f"sphx_glr_{source.stem}_thumb.png").read_bytes()
        assert thumb not in placeholders, f"{source.stem} drew a figure but its thumbnail is the placeholder"
        assert f"sphx_glr_{source.stem}_thumb.png" in index, f"the gallery index does not show {source.stem}'s thumbnail"


def test_pipeline_diagram_is_local_and_on_the_overview(built_site):
    svg = (DOCS / "_static" / "lowering-pipeline.svg").read_text(encoding="utf-8")
    urls = set(re.findall(r"https?://[^\s\"')]+", svg)) - {"http://www.w3.org/2000/svg"}
    assert not urls, f"the diagram refers to the network: {urls}"
    for step in ("Export", "Transform passes", "Partition", ".to_executorch()", "executorch.runtime"):
        assert step in svg, f"the diagram lacks the step {step!r}"
    (image,) = soup(built_site / "overview.html").select('img[src*="lowering-pipeline"][src$=".svg"]')
    assert (built_site / image["src"]).is_file()


def test_no_page_loads_anything_from_another_host(built_site):
    # The site works offline and tells no third party who reads it: every
    # script, style sheet, image and frame of every HTML file the build
    # writes comes from the site itself.
    problems = []
    pages = sorted(built_site.rglob("*.html"))
    for page in pages:
        parsed = soup(page)
        for tag, attribute in (("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src")):
            for element in parsed.find_all(tag):
                url = element.get(attribute) or ""
                if tag == "link" and not {"stylesheet", "preload", "icon"} & set(element.get("rel") or []):
                    continue
                if urlsplit(url).scheme or url.startswith("//"):
                    problems.append(f"{page.relative_to(built_site)}: <{tag} {attribute}={url!r}>")
    assert len(pages) > 20, f"only {len(pages)} HTML files under {built_site}"
    assert not problems, "\n".join(problems)
