"""The machinery behind the executed XNNPACK lowering guide; readers never import it.

Code a reader sees or downloads uses public packages only (:mod:`xnnguide.doccheck.reader_code` checks that).
The package has two layers, and ``tests/static/test_layers.py`` reads every import to keep them:

* :mod:`xnnguide.core`, the bottom: run records, facts, regions, the environment, reading delegation,
  quantization schemes, path display. It imports nothing of ours from above, and needs no Sphinx.
* above it, four packages that import only ``core`` and themselves, never each other:
  :mod:`xnnguide.site` (the Sphinx extension), :mod:`xnnguide.doccheck` (the drift checker),
  :mod:`xnnguide.tools` (the command-line tools) and :mod:`xnnguide.recipe_checks` (what recipes' hidden
  blocks call to check their claims).
"""
