"""``ledger``: every code block has a fate in the execution ledger, checked against the recipes' run records.

With ``--run``: the blocks included or copied from a recipe show a recipe that passed its last run in its
current form (the ledger the checker just made says so). With ``--build``: the ledger the last build
published (``<gallery>/_records/ledger.json``) has every block of the pages, each with a fate.
"""

from __future__ import annotations

import json

from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding

NAME = "ledger"


def check(context: Context) -> list[Finding]:
    findings = []
    if context.options.run:
        findings += [Finding(e["path"], e["line"], NAME, e["detail"], "make the block show a region of a recipe that "
                             "runs and passes (`make html`), or mark it not-run with a reason")
                     for e in context.ledger if not e["ok"] and e["fate"] in ("included", "copy")]
    if context.options.build:
        findings += published_ledger(context)
    return findings


def published_ledger(context: Context) -> list[Finding]:
    """The blocks the last build's ledger misses or gives no fate."""
    gallery = context.project.gallery
    if gallery is None:
        return [Finding(display(context.options.root), 1, NAME, "no sphinx-gallery folder is configured, so there "
                        "are no run records to read", "pass --gallery, or configure sphinx_gallery_conf in conf.py")]
    path = gallery / "_records" / "ledger.json"  # where the build's execution-ledger directive writes it
    try:
        published = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [Finding(display(path), 1, NAME, "the last build published no execution ledger",
                        "build the site (`make html`): the execution-ledger directive writes it")]
    entries, findings = {(entry["path"], entry["line"]): entry for entry in published.get("entries", [])}, []
    for shown, block in ((display(d.path), b) for d in context.documents for b in d.blocks if b.fate != "other"):
        if (entry := entries.get((shown, block.line))) is None:
            findings.append(Finding(shown, block.line, NAME, "this code block is not in the last build's "
                                    "execution ledger", "rebuild (`make html`)"))
        elif not entry.get("ok"):
            findings.append(Finding(shown, block.line, NAME, f"no fate in the last build: {entry['detail']}",
                                    "make it run and pass, include it from a recipe that passes, or mark it not-run "
                                    "with a reason"))
    return findings
