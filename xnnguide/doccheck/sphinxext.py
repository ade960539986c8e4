"""Publish the execution ledger in the build: the ``execution-ledger`` directive.

When Sphinx reads the page holding the directive, after sphinx-gallery has
run the recipes, the directive runs the checker in a separate process
(``python -m xnnguide.doccheck --run``) over the configured paths: it executes
every doctest and page-order block and reads every recipe's run record. The
ledger it writes (``<gallery>/_records/ledger.json``) is rendered as one table
per page: each code block with its fate. A block with no fate becomes a
build warning at its own ``path:line`` (``make test`` builds with ``-W``), and
``python -m xnnguide.doccheck --build`` / the test suite check the JSON.

Configuration (``conf.py``)::

    extensions += ["xnnguide.doccheck.sphinxext"]
    doccheck_paths = ["README.md", "docs", "snippets"]  # relative to conf.py's folder

``doccheck_paths`` defaults to the README next to ``conf.py``, the source
folder and sphinx-gallery's ``examples_dirs``. The page is re-read on every
build, and the previous ledger is deleted when a build starts, so the ledger
on disk is always this build's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from xnnguide.doccheck.checker import FATES

logger = logging.getLogger(__name__)


def _gallery(app: Sphinx) -> Path | None:
    conf = getattr(app.config, "sphinx_gallery_conf", None) or {}
    outputs = conf.get("gallery_dirs")
    if not outputs:
        return None
    first = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
    return Path(app.srcdir) / first


def ledger_file(app: Sphinx) -> Path:
    gallery = _gallery(app)
    if gallery is not None:
        return gallery / "_records" / "ledger.json"
    return Path(app.outdir).parent / "doccheck-ledger.json"


def _paths(app: Sphinx) -> list[Path]:
    confdir = Path(app.confdir)
    if app.config.doccheck_paths:
        return [confdir / p for p in app.config.doccheck_paths]
    paths = [p for p in confdir.glob("README*") if p.suffix in (".md", ".rst")]
    paths.append(Path(app.srcdir))
    conf = getattr(app.config, "sphinx_gallery_conf", None) or {}
    examples = conf.get("examples_dirs") or []
    for example in [examples] if isinstance(examples, str) else examples:
        paths.append((Path(app.srcdir) / example).resolve())
    return paths


def _start(app: Sphinx) -> None:
    """A ledger on disk always comes from the build that is running."""
    path = ledger_file(app)
    if path.exists():
        path.unlink()


class ExecutionLedgerDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        self.env.note_reread()  # the ledger is about every page: rebuild it every time
        app = self.env.app
        target = ledger_file(app)
        confdir = Path(app.confdir)
        command = [sys.executable, "-m", "xnnguide.doccheck", "--run", "--rules", "5,6", "--quiet",
                   "--root", str(confdir), "--ledger-json", str(target)]
        conf = confdir / "conf.py"
        if conf.is_file():
            command += ["--conf", str(conf)]
        gallery = _gallery(app)
        if gallery is not None:
            command += ["--gallery", str(gallery)]
        command += [str(p) for p in _paths(app)]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(confdir), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        done = subprocess.run(command, cwd=confdir, env=env, capture_output=True, text=True,
                              timeout=app.config.doccheck_timeout)
        if done.returncode == 2 or not target.is_file():
            logger.warning("execution-ledger: the checker could not run: %s", done.stderr.strip() or done.stdout,
                           location=(self.env.docname, self.lineno), type="xnnguide", subtype="ledger")
            return []
        ledger = json.loads(target.read_text(encoding="utf-8"))
        for problem in ledger.get("findings", []):
            logger.warning("execution-ledger: %s", problem, location=(self.env.docname, self.lineno),
                           type="xnnguide", subtype="ledger")
        return self._render(ledger)

    def _render(self, ledger: dict[str, Any]) -> list[nodes.Node]:
        entries = ledger["entries"]
        counts = ledger["counts"]
        intro = nodes.paragraph()
        parts = [f"{counts.get(fate, 0)} {label}" for fate, label in FATES.items() if counts.get(fate)]
        if counts.get("none"):
            parts.append(f"{counts['none']} with no fate")
        intro += nodes.Text(f"This build accounted for {len(entries)} code blocks: {', '.join(parts) or 'none'}.")
        result: list[nodes.Node] = [intro]
        not_run = [e for e in entries if e["fate"] == "not-run"]
        summary = nodes.paragraph()
        summary += nodes.Text(f"Blocks marked not-run: {len(not_run)}.")
        result.append(summary)
        by_page: dict[str, list[dict]] = {}
        for entry in entries:
            by_page.setdefault(entry["path"], []).append(entry)
        for page, rows in by_page.items():
            rubric = nodes.rubric(text=page)
            result.append(rubric)
            result.append(self._table(rows))
        return result

    def _table(self, rows: list[dict]) -> nodes.table:
        header = ["Line", "Language", "Fate", "Detail"]
        table = nodes.table(classes=["xnnguide-ledger"])
        group = nodes.tgroup(cols=len(header))
        table += group
        for width in (1, 2, 3, 10):
            group += nodes.colspec(colwidth=width)

        def row(cells: list[str]) -> nodes.row:
            out = nodes.row()
            for cell in cells:
                entry = nodes.entry()
                entry += nodes.paragraph(text=cell)
                out += entry
            return out

        head = nodes.thead()
        head += row(header)
        body = nodes.tbody()
        for item in rows:
            fate = FATES.get(item["fate"], "no fate") if item["ok"] else f"NO FATE ({item['fate'] or 'none'})"
            body += row([str(item["line"]), item["language"] or "-", fate, item["detail"]])
        group += head
        group += body
        return table


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("doccheck_paths", [], "env")
    app.add_config_value("doccheck_timeout", 1800, "env")
    app.add_directive("execution-ledger", ExecutionLedgerDirective)
    # Before sphinx-gallery (priority 500) runs the recipes.
    app.connect("builder-inited", _start, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
