"""The ``execution-ledger`` directive: what became of every code block, published in the build.

It runs the drift checker (``python -m xnnguide.doccheck --run``) over ``doccheck_paths``, which writes
``<gallery>/_records/ledger.json``, and shows it as one table per page, warning for each block with no fate.
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

from xnnguide.core.records import FATES, records_dir
from xnnguide.site.directives import rst_table
from xnnguide.site.runs import gallery_dir

logger = logging.getLogger(__name__)


def _start(app: Sphinx) -> None:
    (records_dir(gallery_dir(app)) / "ledger.json").unlink(missing_ok=True)


class ExecutionLedgerDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        self.env.note_reread()  # the ledger is about every page: rebuild it every time
        app, confdir, gallery = self.env.app, Path(self.env.app.confdir), gallery_dir(self.env)
        target = records_dir(gallery) / "ledger.json"
        command = [sys.executable, "-m", "xnnguide.doccheck", "--run", "--rules", "fate,syntax,run,ledger", "--quiet",
                   "--root", str(confdir), "--ledger-json", str(target), "--conf", str(confdir / "conf.py"),
                   "--gallery", str(gallery)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(confdir), os.environ.get("PYTHONPATH")]))}
        command += [str(confdir / path) for path in app.config.doccheck_paths]
        done = subprocess.run(command, cwd=confdir, env=env, capture_output=True, text=True,
                              timeout=app.config.doccheck_timeout)
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
            result += [nodes.rubric(text=page), rst_table(["Line", "Language", "Fate", "Detail"], rows, None,
                                                       "xnnguide-ledger")]
        return result


def register(app: Sphinx) -> None:
    app.add_config_value("doccheck_paths", ["README.md", "docs", "snippets"], "env")
    app.add_config_value("doccheck_timeout", 1800, "env")
    app.add_directive("execution-ledger", ExecutionLedgerDirective)
    app.connect("builder-inited", _start, priority=450)  # before sphinx-gallery (500) runs the recipes
