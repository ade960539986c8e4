"""Navigation by kind of page: the sections of the root toctree, on every page.

``docs/index.md`` groups the pages in captioned toctrees, one per kind of page
(Tutorial, How-to guides, Reference...). The pydata theme's header lists pages,
not captions; the templates get ``xnnguide_sections``, the captioned sections in
order, so the header shows one entry (a link, or a menu) per section and the
sidebar the whole tree under the same captions. Empty sections are left out.
"""

from __future__ import annotations

from typing import Any

from sphinx import addnodes
from sphinx.application import Sphinx


def root_sections(app: Sphinx) -> list[tuple[str, list[str]]]:
    """``(caption, [docname, ...])`` for each captioned toctree of the root document."""
    root = app.config.root_doc
    toc = app.env.tocs.get(root)
    if toc is None:
        return []
    sections = []
    for toctree in toc.findall(addnodes.toctree):
        caption = toctree.get("caption")
        docnames = [docname for _title, docname in toctree["entries"] if docname in app.env.all_docs]
        if caption and docnames:
            sections.append((caption, docnames))
    return sections


def _ancestors(app: Sphinx, docname: str) -> set[str]:
    """*docname* and every document whose toctree leads to it."""
    lineage = {docname}
    while parents := {parent for parent, children in app.env.toctree_includes.items()
                      if lineage.intersection(children)} - lineage:
        lineage |= parents
    return lineage


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    if "pathto" not in context:
        return
    lineage = _ancestors(app, pagename)
    sections = []
    for caption, docnames in root_sections(app):
        pages = [
            {
                "title": app.env.titles[docname].astext() if docname in app.env.titles else docname,
                "href": context["pathto"](docname),
                "current": docname in lineage,
            }
            for docname in docnames
        ]
        sections.append({"caption": caption, "pages": pages, "current": any(page["current"] for page in pages)})
    context["xnnguide_sections"] = sections


def _navigation_changed(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Rewrite every page when the root document changes: each one shows its sections."""
    if app.config.root_doc in added | changed or removed:
        return sorted(env.found_docs)
    return []


def register(app: Sphinx) -> None:
    app.connect("html-page-context", _page_context)
    app.connect("env-get-outdated", _navigation_changed)
