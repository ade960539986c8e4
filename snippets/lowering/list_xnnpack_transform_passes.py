"""
List the XNNPACK transform passes
=================================

``to_edge_transform_and_lower`` takes an optional ``transform_passes``
argument, and XNNPACK's examples pass ``get_transform_passes()`` to it. This
recipe asks the installed executorch what that list holds: each pass by name,
with what its own docstring says it rewrites.
:doc:`compare_lowering_with_and_without_transform_passes` measures what the
list changes, and the :doc:`explanation page
</explanation/why_transform_passes>` discusses it.
"""

# %%
# What ``get_transform_passes()`` returns
# ---------------------------------------
# The list is read from the installed package, not from its documentation:
# each entry is a pass object; the first sentence of its class's own
# docstring says what it rewrites.

# [start list_passes]
import inspect

from executorch.backends.xnnpack.utils.configs import get_transform_passes


def doc_summary(cls: type) -> str:
    """The first sentence of a class's own docstring (not one it inherits)."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return (
        paragraph.split(". ")[0].rstrip(".") + "."
        if paragraph
        else "(no docstring of its own)"
    )


signature = inspect.signature(get_transform_passes).replace(
    return_annotation=inspect.Signature.empty
)
print(f"get_transform_passes{signature}")
for transform in get_transform_passes():
    print(f"{type(transform).__name__}: {doc_summary(type(transform))}")
# [end list_passes]

# %%
# Every lowering on this site passes this list. A lowering that leaves it out
# raises no error; :doc:`compare_lowering_with_and_without_transform_passes`
# shows what it costs on a model the passes change.

# sphinx_gallery_start_ignore
from xnnguide.core import facts

transforms = get_transform_passes()
assert transforms, "get_transform_passes() returned nothing"
facts.record_table(
    "transform_passes",
    ["Pass", "Defined in", "What its docstring says"],
    [[type(t).__name__, type(t).__module__, doc_summary(type(t)).replace("``", "")] for t in transforms],
)
facts.record("transform_pass_count", len(transforms))
facts.record("transform_pass_names", ", ".join(type(t).__name__ for t in transforms))
facts.record("signature", f"get_transform_passes{signature}")
# sphinx_gallery_end_ignore
