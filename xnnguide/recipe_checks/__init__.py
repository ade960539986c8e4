"""What recipes' hidden blocks and build steps import to check their claims: :mod:`.operator_probes` (what the
partitioner claims, operator by operator, judged on the probe models of :mod:`.operator_probe_models`),
:mod:`.quantization` (the figures every quantization recipe records) and :mod:`.runtime_errors` (the runtime's
error codes by name). Recipes record figures with :mod:`xnnguide.core.facts`. Code a reader sees never imports
any of them."""
