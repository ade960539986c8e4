"""What a recipe's page shows as its output: what the recipe prints, not what the libraries log.

sphinx-gallery points both ``sys.stdout`` and ``sys.stderr`` at its capture before each code block runs, so
the runtime's log (ExecuTorch's bindings write ``[threadpool.cpp:66] ...`` through ``sys.stderr``) and the
libraries' warnings, with the build machine's paths in them, would land on the page. In a one-recipe build's
process, :func:`show_printed_output_only` adds an audit hook (:func:`sys.addaudithook`, public Python) that, as
each block is executed (the ``exec`` event), sends ``sys.stderr`` back to the process's own standard error, the
build's log. A recipe that shows such a line on purpose captures it (``contextlib.redirect_stderr``) and
prints it, as the troubleshooting recipes do.
"""

from __future__ import annotations

import sys


def _stderr_to_log(event: str, _args: tuple) -> None:
    # Only while sphinx-gallery's capture holds both streams: a recipe's own redirect_stderr is left alone.
    if event == "exec" and sys.stderr is sys.stdout and type(sys.stderr).__module__.startswith("sphinx_gallery"):
        sys.stderr = sys.__stderr__


def show_printed_output_only() -> None:
    """From now on in this process, recipe pages show standard output only (audit hooks last as long as it)."""
    sys.addaudithook(_stderr_to_log)
