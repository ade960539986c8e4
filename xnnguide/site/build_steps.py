"""Build steps: scripts in ``docs/build_steps/`` whose work only produces what pages quote (the operator
table's probes, the AOT compiler's transcripts). They run in the shards like recipes, under the watchdog, with
facts and a run record, and run again when stale; unlike recipes they have no gallery page or download and may
import the site's modules. :func:`execute` runs one in a temporary working folder.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import tempfile
import traceback
from pathlib import Path

from xnnguide.core import facts
from xnnguide.site import runs, watchdog


def execute(source: str, facts_dir: str) -> tuple[str, str | None]:
    """In the step's own process: run the script *source* in a fresh folder, recording its facts in *facts_dir*.

    Returns ``("passed", None)``, or ``("failed", traceback)`` when it raised.
    """
    path = Path(source)
    runs.limit_threads(path)
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.argv = [source]
    facts.begin_recipe(path.stem, Path(facts_dir))
    watchdog.mark_started()
    try:
        with tempfile.TemporaryDirectory(prefix=f"xnnguide-{path.stem}-") as work, contextlib.chdir(work):
            runpy.run_path(source, run_name="__main__")
    except BaseException as error:  # noqa: BLE001 - the step's failure is its run record's error
        return "failed", "".join(traceback.format_exception(error))
    finally:
        facts.end_recipe()
    return "passed", None
