"""What recipes import, in their hidden blocks only: :mod:`.facts` to record measured figures for
the pages, and helpers that check a recipe's claims (:mod:`.delegation`, :mod:`.operator_probes`,
:mod:`.runtime_errors`). Code a reader sees never imports them."""
