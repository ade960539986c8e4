"""The machinery behind the executed XNNPACK lowering guide; readers never import it.

Code a reader sees or downloads uses public packages only (:mod:`xnnguide.reader_code`
checks that). The folders say who uses what:

* the modules at the top are Sphinx-free and shared by the build, the checks, ``make recipe``
  and the tests: :mod:`~xnnguide.records` (run records and when a recipe must run again),
  :mod:`~xnnguide.regions` (marked regions of recipes and their copies),
  :mod:`~xnnguide.reader_code` (what readers get), :mod:`~xnnguide.results`,
  :mod:`~xnnguide.run_recipe` and :mod:`~xnnguide.environment`;
* :mod:`xnnguide.site` is the Sphinx extension;
* :mod:`xnnguide.doccheck` is the drift checker;
* :mod:`xnnguide.recipe_checks` is what recipes import, in hidden blocks only;
* :mod:`xnnguide.tools` holds the command-line tools: the AOT compiler and the benchmarks.
"""
