"""The built site's files: links between pages, downloads, thumbnails, the diagram."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import DOCS, GALLERY, SNIPPETS

pytestmark = pytest.mark.build


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name in ("href", "src"):
            if attributes.get(name) and not (tag == "a" and name == "src"):
                self.links.append(attributes[name])
        for name in ("id", "name"):
            if attributes.get(name):
                self.ids.add(attributes[name])


def parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


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


def test_every_recipe_page_links_its_py_and_ipynb(built_site):
    for source in sorted(SNIPPETS.glob("*.py")):
        page = built_site / "gallery" / f"{source.stem}.html"
        links = [link for link in parse(page).links if "_downloads/" in link]
        py = [link for link in links if link.endswith(f"/{source.stem}.py")]
        ipynb = [link for link in links if link.endswith(f"/{source.stem}.ipynb")]
        assert py and ipynb, f"{page.name}: download links {links}"
        assert (page.parent / py[0]).read_text(encoding="utf-8") == source.read_text(encoding="utf-8")
        notebook = json.loads((page.parent / ipynb[0]).read_text(encoding="utf-8"))
        assert notebook["nbformat"] == 4, f"{ipynb[0]} is not a notebook"
        assert any(cell["cell_type"] == "code" for cell in notebook["cells"]), f"{ipynb[0]} has no code"


def test_a_recipe_plot_makes_a_gallery_thumbnail(built_site):
    thumbs = GALLERY / "images" / "thumb"
    with_figure = sorted(source.stem for source in SNIPPETS.glob("*.py")
                         if (GALLERY / "images" / f"sphx_glr_{source.stem}_001.png").is_file())
    without_figure = sorted(source.stem for source in SNIPPETS.glob("*.py") if source.stem not in with_figure)
    assert with_figure, "no recipe draws a figure, so every thumbnail is the placeholder"
    placeholders = {(thumbs / f"sphx_glr_{name}_thumb.png").read_bytes() for name in without_figure}
    for name in with_figure:
        thumb = (thumbs / f"sphx_glr_{name}_thumb.png").read_bytes()
        assert thumb not in placeholders, f"{name} drew a figure but its thumbnail is the placeholder"
        assert f"sphx_glr_{name}_thumb.png" in (built_site / "gallery" / "index.html").read_text(encoding="utf-8")


def test_pipeline_diagram_is_local_and_on_the_overview(built_site):
    svg = (DOCS / "_static" / "lowering-pipeline.svg").read_text(encoding="utf-8")
    urls = set(re.findall(r"https?://[^\s\"')]+", svg)) - {"http://www.w3.org/2000/svg"}
    assert not urls, f"the diagram refers to the network: {urls}"
    for step in ("Export", "Transform passes", "Partition", ".to_executorch()", "executorch.runtime"):
        assert step in svg, f"the diagram lacks the step {step!r}"
    overview = (built_site / "overview.html").read_text(encoding="utf-8")
    (src,) = re.findall(r'<img[^>]+src="([^"]*lowering-pipeline[^"]*\.svg)"', overview)
    assert (built_site / src).is_file()
