"""The end of a build: one line per problem, and a failing exit status.

A ``literalinclude`` that lost its block (only a warning, which a build without ``-W`` passes) and a failed
recipe (its traceback far above the end) are printed last as ``path:line: rule: message``, and the exit status
becomes 1. Lost includes are kept in the build environment, so a page that is not re-read still counts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude

from xnnguide.core.paths import display
from xnnguide.core.records import load_run_record, records_dir
from xnnguide.core.results import check_build_steps, check_recipes

_KEY = "xnnguide_lost_includes"


def kept_by_page(env: Any, key: str) -> dict[str, list[Any]]:
    """What the build environment keeps under *key*, page by page (:func:`keep_by_page`)."""
    return env.__dict__.setdefault(key, {})


def keep_by_page(app: Sphinx, *keys: str) -> None:
    """Keep what pages add under *keys* across builds: a page's entries go when it is read again, and those of
    parallel readers are merged."""

    def purge(app: Sphinx, env: Any, docname: str) -> None:
        for key in keys:
            kept_by_page(env, key).pop(docname, None)

    def merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
        for key in keys:
            kept_by_page(env, key).update({name: found for name, found in kept_by_page(other, key).items()
                                           if name in docnames})

    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)


class TrackedLiteralInclude(LiteralInclude):
    """Sphinx's ``literalinclude``, remembering when it shows nothing but a warning."""

    def run(self) -> list[nodes.Node]:
        result = super().run()
        problems = [node for node in result if isinstance(node, nodes.system_message)]
        if problems:
            source, line = self.get_source_info()
            message = problems[0][0].astext() if len(problems[0]) else problems[0].astext()
            kept_by_page(self.env, _KEY).setdefault(self.env.docname, []).append((source, line or self.lineno, message))
        return result


def problems(app: Sphinx) -> list[str]:
    """This build's failed recipes and lost includes, one ``path:line: rule: message`` each."""
    lines = []
    gallery = Path(app.srcdir) / getattr(app.config, "xnnguide_gallery_dir", "gallery")
    snippets = Path(app.confdir) / "snippets"
    if app.builder.name == "html" and (records_dir(gallery) / "runs").is_dir():
        # A one-recipe build (xnnguide.site.build) answers for its recipe; the pages' build for every failed run.
        only = getattr(app.config, "xnnguide_recipe", "")
        lines += [str(problem) for problem in check_recipes(snippets, gallery, Path.cwd())
                  if (problem.path.stem == only if only
                      else (load_run_record(gallery, problem.path.stem) or {}).get("status") == "failed")]
        if not only:
            lines += [str(problem) for problem in check_build_steps(Path(app.srcdir), gallery, Path.cwd())]
    for _docname, lost in sorted(kept_by_page(app.env, _KEY).items()):
        for source, line, message in lost:
            lines.append(f"{display(source)}:{line}: include: the page lost an included block: {message} — "
                         "fix the path or the ':start-after:'/':end-before:' marker (the whole line, e.g. "
                         "\"# [start lower]\")")
    return lines


def _summarise(app: Sphinx, exception: Exception | None) -> None:
    found = problems(app) if exception is None else []
    if found:
        print(f"\n{len(found)} problem(s) in this build:", *found, sep="\n", file=sys.stderr)
        app.statuscode = 1


def register(app: Sphinx) -> None:
    app.add_directive("literalinclude", TrackedLiteralInclude, override=True)
    keep_by_page(app, _KEY)
    # After sphinx-gallery's own summary of failing examples (priority 500).
    app.connect("build-finished", _summarise, priority=900)


def setup(app: Sphinx) -> dict[str, Any]:
    """Used alone as an extension (the tests do); the site registers it in :func:`xnnguide.site.setup`."""
    register(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
