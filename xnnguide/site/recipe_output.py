"""What a recipe's page shows as its output: what the recipe prints, not what the libraries log.

sphinx-gallery puts everything a recipe writes to standard output *and* standard error on its page. On
standard error go the runtime's log (``[threadpool.cpp:66] Resetting threadpool to 1 threads.``, which
ExecuTorch's Python bindings write through ``sys.stderr``) and the warnings torch and ExecuTorch raise,
with the build machine's paths in them: noise on a page, which readers running the file see in their
terminal anyway. :func:`show_printed_output_only` keeps sphinx-gallery's capture of standard output and
sends standard error to the build's log. A recipe that shows such a line on purpose captures it
(``contextlib.redirect_stderr``) and prints it, as the troubleshooting recipes do.
"""

from __future__ import annotations

import sys
from typing import Any

from sphinx_gallery import gen_rst

_capture_both = gen_rst._LoggingTee.set_std_and_reset_position


def _capture_standard_output(tee: Any) -> Any:
    _capture_both(tee)
    sys.stderr = tee.origs[1]  # the process's own standard error: the build's log
    return tee


def show_printed_output_only() -> None:
    """From now on in this process, recipe pages show standard output only; idempotent."""
    gen_rst._LoggingTee.set_std_and_reset_position = _capture_standard_output
