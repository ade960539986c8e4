"""The partitioner page's table of options: one plain line per option, checked against the installed code.

``snippets/lowering/measure_partitioner_options.py`` reads the options of the installed ``XnnpackPartitioner``
(its ``__init__`` signature and the keywords its configs' base class reads); :func:`table` pairs each with the
line the page shows. An option the installed partitioner gains or drops fails here, so the lines cannot fall
behind the code.
"""

from __future__ import annotations

import inspect

WHAT_IT_DOES = {
    "configs": "Which operator configs may claim nodes; default: all of XNNPACK's.",
    "config_precisions": "Keep only configs for these precisions: fp32, static or dynamic int8.",
    "per_op_mode": "One delegate per operator instead of one per run of operators; less memory at load, "
                   "more calls.",
    "verbose": "Turn up the partitioner's own logger (not the configs', which say why a node was left out).",
    "force_non_static_weights_for_f32_linear": "Pass fp32 linear weights at every call instead of packing them; "
                                               "not with convolutions.",
    "enable_bf16": "Also claim bfloat16 operators (fp32 and fp16 are claimed anyway).",
}
HEADER = ["Option", "What it does", "Default", "Read by"]


def table(own: dict[str, inspect.Parameter], config_keywords: list[tuple[str, str]]) -> tuple[list[str], list[list]]:
    """``(header, rows)`` for ``facts.record_table``: *own* is the partitioner's ``__init__`` parameters without
    ``self``, *config_keywords* the ``(name, default source)`` pairs the configs' base class reads."""
    assert {"configs", "config_precisions", "per_op_mode", "verbose", "kwargs"} <= set(own), own
    assert dict(config_keywords).keys() >= {"force_non_static_weights_for_f32_linear", "enable_bf16"}, \
        config_keywords
    rows = [[name, "" if p.default is p.empty else repr(p.default), "XnnpackPartitioner.__init__"]
            for name, p in own.items() if p.kind is not p.VAR_KEYWORD]
    rows += [[name, default.strip(), "XNNPartitionerConfig.__init__ (via **kwargs)"]
             for name, default in config_keywords]
    assert {row[0] for row in rows} == set(WHAT_IT_DOES), (sorted(row[0] for row in rows), sorted(WHAT_IT_DOES))
    return HEADER, [[name, WHAT_IT_DOES[name], default, where] for name, default, where in rows]
