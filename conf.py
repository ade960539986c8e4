"""Sphinx configuration of the XNNPACK lowering guide.

The pages live in ``docs/``; this file sits at the root and is passed with ``-c .`` (see the Makefile).
Recipes in ``snippets/`` are run by sphinx-gallery into the generated, git-ignored ``docs/gallery/``.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the xnnguide package, which is never installed

project = "XNNPACK lowering guide"
author = "the XNNPACK guide contributors"
copyright = f"{datetime.date.today().year}, {author}"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_copybutton",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
    "xnnguide.site",  # recipe runs and records, facts, stamps, the execution ledger, navigation
]

# Fragments under _shared are included into pages, never built on their own.
exclude_patterns = ["_shared/**", "gallery/**/*.ipynb", "gallery/_records/**"]

# Every cross-reference must resolve: broken references fail `make test`.
nitpicky = True
nitpick_ignore_regex = [
    # Third-party classes in our helpers' signatures; no inventories offline.
    (r"py:class", r"(torch|executorch|docutils|sphinx|os|pathlib)\..*"),
]

myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
# Figures the pages quote from the code, never typed: {{ default_budget_seconds }} on a page.
from xnnguide.core.machine_load import BUSY_SHARE  # noqa: E402
from xnnguide.core.recipes import DEFAULT_BUDGET_GB, DEFAULT_BUDGET_SECONDS  # noqa: E402

myst_substitutions = {"default_budget_seconds": f"{DEFAULT_BUDGET_SECONDS:g}",
                      "default_budget_gb": f"{DEFAULT_BUDGET_GB:g}", "busy_share": f"{BUSY_SHARE:.0%}"}
myst_heading_anchors = 3

# -- recipes -----------------------------------------------------------------
xnnguide_gallery_dir = "gallery"
# Each recipe's and build step's time and memory budget: recipe_budgets.toml, beside this file (the watchdog and
# the shards read it through xnnguide.core.recipes.budget_table; recipes declare no budget of their own).

sphinx_gallery_conf = {
    # Paths are relative to the source folder, docs/.
    "examples_dirs": "../snippets",
    "gallery_dirs": xnnguide_gallery_dir,
    # Every file in snippets/ is a recipe and runs, not only plot_*.py.
    "filename_pattern": r".*\.py$",
    "ignore_pattern": r"__init__\.py$",
    # A recipe that raises fails the build: sphinx-gallery warns with its traceback instead of raising (Sphinx
    # would add its bug-report text), and xnnguide.site.summary ends the build with the recipe's line, status 1.
    "only_warn_on_example_error": True,
    "reset_modules": ("matplotlib", "xnnguide.site.runs.recipe_hook"),
    "reset_modules_order": "both",
    # sphinx-gallery's execution-times pages load scripts and styles from three CDNs: offline they break, online
    # they tell third parties who reads the site. The Contributing page shows recipe times from our own run
    # records instead (the recipe-times directive of xnnguide.site.directives).
    "write_computation_times": False,
    "remove_config_comments": True,
    "capture_repr": (),
    # The gallery is grouped by task, one subsection (folder of snippets/) per task, from first steps to
    # advanced; each subsection's GALLERY_HEADER.rst lists its recipes in order.
    "subsection_order": ["../snippets/lowering", "../snippets/quantization", "../snippets/llm",
                         "../snippets/performance", "../snippets/troubleshooting"],
    "within_subsection_order": "xnnguide.site.runs.RecipeOrder",
}
# sphinx-build alone runs no recipe: it writes the pages from what the recipes' runs left in docs/gallery. The
# runs are xnnguide.site.run_shards' (`make html`), each a one-recipe build with -D plot_gallery=1.
plot_gallery = "False"

# -- HTML ----------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "XNNPACK lowering guide"
# Paths below are relative to this file's folder (Sphinx gets -c .).
templates_path = ["docs/_templates"]
html_static_path = ["docs/_static"]
html_css_files = ["xnnguide.css"]
# A favicon of our own: without one the browser asks for /favicon.ico and gets a 404.
html_favicon = "docs/_static/favicon.svg"
# Light or dark from the reader's system; pydata otherwise logs a console error on a reader's first visit.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "show_toc_level": 2,
    "navbar_align": "left",
    # The header shows the sections of docs/index.md, not a flat list of pages.
    "navbar_center": ["navbar-sections"],
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# Every page shows the whole site under its section captions.
html_sidebars = {"**": ["sidebar-sections"]}
html_show_sourcelink = False

# Copy buttons copy commands only: prompts ($, >>>, ...) are stripped and output lines dropped, both by the
# highlighter's classes (.gp prompt, .go output) and by the prompt pattern for blocks it does not mark.
# sphinx-gallery's output blocks get no copy button at all.
copybutton_selector = ":not(.sphx-glr-script-out) > div.highlight pre"
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

# `make linkcheck` checks links between pages and files; external URLs are listed in _build/linkcheck/output.json
# as ignored, never fetched. Links and anchors in the built HTML are checked by tests/site_build/test_site_files.py.
linkcheck_ignore = [r"https?://"]

autodoc_typehints = "description"
autodoc_member_order = "bysource"
