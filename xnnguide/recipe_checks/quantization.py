"""What every quantization recipe records for the Quantization page.

The quantization itself lives in :mod:`xnnguide.core.schemes`; this
module only turns a recipe's measured programs into facts and a table.
"""

from __future__ import annotations

import os
from typing import Any

from xnnguide.core import facts
from xnnguide.core.schemes import MIN_SQNR_DB


def record_results(scheme: str, fp32_pte: str | os.PathLike[str], quantized_pte: str | os.PathLike[str],
                   fp32_delegation: Any, quantized_delegation: Any, error_vs_quantized_eager: float,
                   error_vs_fp32: float, *, digits: int = 4, eager: str = "int8",
                   fp32_quantity: str | None = None) -> None:
    """Record the figures every quantization recipe reports, for the Quantization page.

    The two ``.pte`` files' sizes and their ratio; the quantized program's
    delegated and non-delegated node counts and subgraphs (from
    ``get_delegation_info``, *fp32_delegation* and *quantized_delegation*);
    the relative errors, shown with *digits* decimals; a ``results`` table
    with one row per program, its error column headed "vs *eager* eager";
    and ``schemes``, the scheme this recipe ran end to end. Figures only one
    recipe reports, it records itself with :func:`xnnguide.core.facts.record`.
    *fp32_quantity* names the fp32 program's size where another recipe measures it too (see
    :func:`xnnguide.core.facts.record`).
    """
    fp32_size, quantized_size = os.path.getsize(fp32_pte), os.path.getsize(quantized_pte)
    size_ratio = quantized_size / fp32_size
    facts.record("relative_error_vs_int8_eager", error_vs_quantized_eager,
                 f"{error_vs_quantized_eager:.{digits}f}")
    facts.record("relative_error_vs_fp32", error_vs_fp32, f"{error_vs_fp32:.{digits}f}")
    facts.record("fp32_pte_size_bytes", fp32_size, f"{fp32_size:,} bytes", quantity=fp32_quantity)
    facts.record("int8_pte_size_bytes", quantized_size, f"{quantized_size:,} bytes")
    facts.record("size_ratio", size_ratio, f"{size_ratio:.2f}")
    facts.record("delegated_nodes", quantized_delegation.num_delegated_nodes)
    facts.record("non_delegated_nodes", quantized_delegation.num_non_delegated_nodes)
    facts.record("delegated_subgraphs", quantized_delegation.num_delegated_subgraphs)
    nodes = [f"{d.num_delegated_nodes} / {d.num_non_delegated_nodes}" for d in (fp32_delegation, quantized_delegation)]
    facts.record_table(
        "results",
        ["Program", ".pte bytes", "Size vs fp32", "Nodes delegated / not",
         f"Rel. error vs {eager} eager", "Rel. error vs fp32"],
        [
            ["fp32", f"{fp32_size:,}", "1.00", nodes[0], "", ""],
            [scheme, f"{quantized_size:,}", f"{size_ratio:.2f}", nodes[1],
             f"{error_vs_quantized_eager:.{digits}f}", f"{error_vs_fp32:.{digits}f}"],
        ],
    )
    # The schemes this run exercised end to end; the Quantization page's test reads them.
    facts.record("schemes", [scheme], scheme)




def record_min_sqnr(shown: float) -> None:
    """Check the ``MIN_SQNR_DB`` a recipe shows against :data:`MIN_SQNR_DB`; record it as ``min_sqnr_db``."""
    if shown != MIN_SQNR_DB:
        raise AssertionError(f"the recipe checks at MIN_SQNR_DB = {shown:g}, the site's floor is {MIN_SQNR_DB:g} dB "
                             "(xnnguide.core.schemes.MIN_SQNR_DB): use one value")
    facts.record("min_sqnr_db", MIN_SQNR_DB, f"{MIN_SQNR_DB:g} dB")
