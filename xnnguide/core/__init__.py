"""The bottom layer: what the build, the checker, the tools and the recipes all read. No Sphinx, and no import
of the packages above it.

* :mod:`.records`: run records, when a recipe must run again, and the fates of code blocks in the ledger;
* :mod:`.results`: whether every recipe passed in the last build, located in its source;
* :mod:`.shards`: sharded builds, the recipes split between machines and their results merged;
* :mod:`.facts`: figures a recipe measures, carried to the pages that quote them;
* :mod:`.regions`: named regions of recipes, and the blocks copied from them;
* :mod:`.reader_code`: the code a reader gets, and the check that it runs;
* :mod:`.environment`: package versions and the CPU a recipe ran with;
* :mod:`.quiet`: a quiet machine for the lines of a recipe that time something;
* :mod:`.machine_load`: how much of the machine other work took while a recipe timed;
* :mod:`.timings`: timings recorded with their threads, batch and machine state;
* :mod:`.delegation`: reading a lowered graph, what XNNPACK took and what it left;
* :mod:`.schemes`: the quantization schemes, applied as the Quantization guide shows.
"""
