"""Command-line tools, not part of the site build: the one ``calibrate_batchnorm`` recipes copy
(:mod:`.model_zoo`), the build benchmark (``make bench``), where CI's time went (:mod:`.ci_times`), and a contributor's ``make recipe`` and
``make new-recipe`` (:mod:`.run_recipe`, :mod:`.new_recipe` from :mod:`.recipe_template`)."""
