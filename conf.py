"""Sphinx configuration of the XNNPACK lowering guide.

The pages live in ``docs/``; this file sits at the root and is passed with
``-c .`` (see the Makefile). Recipes in ``snippets/`` are run by
sphinx-gallery into the generated, git-ignored ``docs/gallery/``.
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the xnnguide package, even before `pip install -e .`

project = "XNNPACK lowering guide"
author = "the XNNPACK guide contributors"
copyright = f"{datetime.date.today().year}, {author}"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_copybutton",
    "sphinx_design",
    "sphinx_gallery.gen_gallery",
    "xnnguide.sphinxext",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Fragments under _shared are included into pages, never built on their own.
exclude_patterns = ["_shared/**", "gallery/**/*.ipynb", "gallery/_records/**"]

# Every cross-reference must resolve: broken references fail `make test`.
nitpicky = True
nitpick_ignore_regex = [
    # Third-party classes in our helpers' signatures; no inventories offline.
    (r"py:class", r"(torch|executorch|docutils|sphinx|os|pathlib)\..*"),
]

myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3

# -- recipes -----------------------------------------------------------------
xnnguide_gallery_dir = "gallery"

sphinx_gallery_conf = {
    # Paths are relative to the source folder, docs/.
    "examples_dirs": "../snippets",
    "gallery_dirs": xnnguide_gallery_dir,
    # Every file in snippets/ is a recipe and runs, not only plot_*.py.
    "filename_pattern": r".*\.py$",
    "ignore_pattern": r"__init__\.py$",
    # A recipe that raises fails the build; its traceback names the file.
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    # JUnit results, relative to the HTML output folder: _build/gallery-junit.xml.
    "junit": "../gallery-junit.xml",
    "reset_modules": ("matplotlib", "xnnguide.sphinxext.recipe_hook"),
    "reset_modules_order": "both",
    "download_all_examples": True,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 0,
    "capture_repr": (),
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "line_numbers": False,
    "backreferences_dir": None,
    # Recipes run side by side in worker processes, one per core, at most 4 to
    # bound the build's memory; xnnguide.sphinxext gives each worker its share
    # of threads. A recipe that measures speed opts out with
    # `# sphinx_gallery_parallel = False`: it then runs first, alone.
    "parallel": min(os.cpu_count() or 1, 4),
}

# -- HTML ----------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "XNNPACK lowering guide"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False

# Copy buttons leave out prompts and output markers.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False

autodoc_typehints = "description"
autodoc_member_order = "bysource"
