"""The passes XNNPACK runs inside every delegate when it preprocesses it, read from its pass manager.

The pass manager is a private module of the backend (``executorch.backends.xnnpack._passes``), which no reader
code imports; the transform-pass recipe records its list through :func:`record_xnnpack_preprocess_passes`.
"""

from __future__ import annotations

from xnnguide.recipe_checks import transform_passes


def record_xnnpack_preprocess_passes() -> None:
    """Record the passes of XNNPACK's own pass manager (:func:`transform_passes.record_preprocess_passes`)."""
    from executorch.backends.xnnpack._passes import XNNPACKPassManager

    transform_passes.record_preprocess_passes(XNNPACKPassManager(exported_program=None).passes)
