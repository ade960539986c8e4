"""The ``execution-ledger`` directive: what became of every code block, published in the build.

The directive runs ``python -m xnnguide.doccheck --run --rules 5,6`` over ``doccheck_paths`` (relative to
conf.py's folder; default: the README there, the source folder and sphinx-gallery's ``examples_dirs``), which
executes doctest and page-order blocks, reads the recipes' run records and writes
``<gallery>/_records/ledger.json``; the directive shows it as one table per page and warns for each block
with no fate. The ledger of an earlier build is deleted when a build starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from xnnguide.doccheck.checker import FATES
from xnnguide.site.recipes import _table

logger = logging.getLogger(__name__)


def _gallery(app: Sphinx) -> Path | None:
    outputs = (getattr(app.config, "sphinx_gallery_conf", None) or {}).get("gallery_dirs")
    return Path(app.srcdir) / (outputs[0] if isinstance(outputs, (list, tuple)) else outputs) if outputs else None


def ledger_file(app: Sphinx) -> Path:
    gallery = _gallery(app)
    return gallery / "_records" / "ledger.json" if gallery else Path(app.outdir).parent / "doccheck-ledger.json"


def _paths(app: Sphinx) -> list[Path]:
    confdir = Path(app.confdir)
    if app.config.doccheck_paths:
        return [confdir / p for p in app.config.doccheck_paths]
    examples = (getattr(app.config, "sphinx_gallery_conf", None) or {}).get("examples_dirs") or []
    return [*(p for p in confdir.glob("README*") if p.suffix in (".md", ".rst")), Path(app.srcdir),
            *((Path(app.srcdir) / e).resolve() for e in ([examples] if isinstance(examples, str) else examples))]


def _start(app: Sphinx) -> None:
    ledger_file(app).unlink(missing_ok=True)


class ExecutionLedgerDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        self.env.note_reread()  # the ledger is about every page: rebuild it every time
        app, confdir = self.env.app, Path(self.env.app.confdir)
        target, gallery = ledger_file(app), _gallery(app)
        command = [sys.executable, "-m", "xnnguide.doccheck", "--run", "--rules", "5,6", "--quiet", "--root",
                   str(confdir), "--ledger-json", str(target)]
        command += ["--conf", str(confdir / "conf.py")] if (confdir / "conf.py").is_file() else []
        command += ["--gallery", str(gallery)] if gallery else []
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(confdir), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(command + [str(p) for p in _paths(app)], cwd=confdir, env=env, capture_output=True,
                              text=True, timeout=app.config.doccheck_timeout)
        where = {"location": (self.env.docname, self.lineno), "type": "xnnguide", "subtype": "ledger"}
        if done.returncode == 2 or not target.is_file():
            logger.warning("execution-ledger: the checker could not run: %s", done.stderr.strip() or done.stdout,
                           **where)
            return []
        ledger = json.loads(target.read_text(encoding="utf-8"))
        for problem in ledger.get("findings", []):
            logger.warning("execution-ledger: %s", problem, **where)
        counts, entries = ledger["counts"], ledger["entries"]
        parts = [f"{counts.get(fate, 0)} {label}" for fate, label in FATES.items() if counts.get(fate)]
        parts += [f"{counts['none']} with no fate"] if counts.get("none") else []
        result: list[nodes.Node] = [
            nodes.paragraph(text=f"This build accounted for {len(entries)} code blocks: {', '.join(parts) or 'none'}."),
            nodes.paragraph(text=f"Blocks marked not-run: {sum(e['fate'] == 'not-run' for e in entries)}.")]
        for page in dict.fromkeys(entry["path"] for entry in entries):
            rows = [[str(e["line"]), e["language"] or "-", FATES.get(e["fate"], "no fate") if e["ok"] else
                     f"NO FATE ({e['fate'] or 'none'})", e["detail"]] for e in entries if e["path"] == page]
            result += [nodes.rubric(text=page), _table(["Line", "Language", "Fate", "Detail"], rows, None,
                                                       "xnnguide-ledger")]
        return result


def register(app: Sphinx) -> None:
    app.add_config_value("doccheck_paths", [], "env")
    app.add_config_value("doccheck_timeout", 1800, "env")
    app.add_directive("execution-ledger", ExecutionLedgerDirective)
    app.connect("builder-inited", _start, priority=450)  # before sphinx-gallery (500) runs the recipes
