"""Navigation by kind of page: the sections of the root toctree, on every page.

The templates get ``xnnguide_sections``, the captioned toctrees of ``docs/index.md`` in order (empty ones left
out), so the header shows one entry per kind of page and the sidebar the whole tree under the same captions.
"""

from __future__ import annotations

from typing import Any

from sphinx import addnodes
from sphinx.application import Sphinx


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Hand the template each captioned toctree of the root document and its pages, marking the current ones."""
    if "pathto" not in context:
        return
    lineage = {pagename}  # the page and every page whose toctree leads to it
    while parents := {parent for parent, children in app.env.toctree_includes.items()
                      if lineage.intersection(children)} - lineage:
        lineage |= parents
    root, sections = app.env.tocs.get(app.config.root_doc), []
    for toctree in root.findall(addnodes.toctree) if root is not None else ():
        pages = [{"title": app.env.titles[name].astext() if name in app.env.titles else name,
                  "href": context["pathto"](name), "current": name in lineage}
                 for _title, name in toctree["entries"] if name in app.env.all_docs]
        if toctree.get("caption") and pages:
            sections.append({"caption": toctree["caption"], "pages": pages,
                             "current": any(page["current"] for page in pages)})
    context["xnnguide_sections"] = sections


def _navigation_changed(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Rewrite every page when the root document changes: each one shows its sections."""
    return sorted(env.found_docs) if app.config.root_doc in added | changed or removed else []


def register(app: Sphinx) -> None:
    app.connect("html-page-context", _page_context)
    app.connect("env-get-outdated", _navigation_changed)
