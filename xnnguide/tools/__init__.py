"""Command-line tools, not part of the site build: the AOT compiler (``python -m xnnguide.tools.aot_compiler``)
and its model zoo, the build benchmark (``make bench``), the comparison with ExecuTorch's example compiler
(``make bench-aot``), where CI's time went (:mod:`.ci_times`), and a contributor's ``make recipe`` and
``make new-recipe`` (:mod:`.run_recipe`, :mod:`.new_recipe` from :mod:`.recipe_template`)."""
