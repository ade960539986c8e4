"""What recipes import in their hidden blocks to check their claims: :mod:`.operator_probes` (what the
partitioner claims, operator by operator), :mod:`.quantization` (the figures every quantization recipe records)
and :mod:`.runtime_errors` (the runtime's error codes by name). Recipes record figures with
:mod:`xnnguide.core.facts`. Code a reader sees never imports any of them."""
