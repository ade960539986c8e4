"""Compile a PyTorch model to an XNNPACK ``.pte`` file in one command.

``python -m xnnguide.tools.aot_compiler --model mv2 -o out/`` runs the flow every
page of the guide teaches: ``torch.export``, optional quantization (the
schemes of :mod:`xnnguide.core.schemes`), ``to_edge_transform_and_lower``
with the XNNPACK transform passes and partitioner, and serialization. With
``--test-after-export`` it then loads the file on the ExecuTorch runtime and
compares its output with eager PyTorch. ``--recipe TYPE`` replaces the
quantization and lowering steps with ``executorch.export`` and one of
ExecuTorch's XNNPACK recipes, given the transform passes it ships without.

Exit status: 0 on success; 1 when the test fails or on an internal error; 2
for bad input (see ``--help``). Errors are one line on stderr; ``--traceback``
adds the Python traceback behind them. Files are written to a temporary name
and renamed into place, so a failure never leaves half a ``.pte`` behind.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import sysconfig
import tempfile
import textwrap
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch
from torch.utils._pytree import tree_leaves

from xnnguide.core.delegation import delegate_calls, ops_inside_delegates, ops_outside_delegates
from xnnguide.tools import model_zoo
from xnnguide.tools.model_zoo import one_line
from xnnguide.core.paths import display
from xnnguide.core.schemes import MIN_SQNR_DB, NONE, SCHEMES, quantize, scheme_named

# Importing torchao (executorch does) logs a deprecation notice about torch's
# pytree registry, none of the user's business. The toolchain is imported here,
# as in ExecuTorch's example compiler: under CPython 3.11 these import chains
# cost up to 2 s more from inside a function.
logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner  # noqa: E402
from executorch.backends.xnnpack.utils.configs import get_transform_passes  # noqa: E402
from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower  # noqa: E402
from executorch.backends.xnnpack.recipes import XNNPackRecipeType  # noqa: E402

PROG = "python -m xnnguide.tools.aot_compiler"
NAME = "aot_compiler"

# Schemes whose activation ranges are frozen from calibration inputs.
STATIC_SCHEMES = tuple(name for name, scheme in SCHEMES.items() if scheme.needs_calibration)
#: The values --quantize takes for a decoder, the LLM flow: "none or 8da4w".
DECODER_SCHEMES = " or ".join(s.name for s in (NONE, *SCHEMES.values()) if s.suits_decoders)
DEFAULT_CALIBRATION_SAMPLES = 8
# --recipe TYPE: the installed executorch's XNNPACK recipe types, by value.
RECIPES = {recipe_type.value: recipe_type for recipe_type in XNNPackRecipeType}
# (atol, rtol) of --test-after-export in fp32: XNNPACK may reorder sums.
FP32_TOLERANCE = (1e-4, 1e-4)
# A quantized program is checked by the SQNR against the quantized eager model, at least MIN_SQNR_DB:
# eager simulates integers with floats, and one-step rounding differences add up over deep networks.

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input; reported as one line, exit status 2."""


class CheckFailed(Exception):
    """--test-after-export failed; reported as one line, exit status 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse would print the whole usage first; one line is enough.
        raise UsageError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; ``--help`` describes every option."""
    def listing(entries: dict[str, str]) -> str:
        # The epilog is preformatted (RawDescriptionHelpFormatter), so wrap it here.
        width = max(len(name) for name in entries) + 4
        return "\n".join(textwrap.fill(text, 79, initial_indent=f"  {name:<{width - 2}}", subsequent_indent=" " * width)
                         for name, text in entries.items())

    models = listing({name: description for name, (description, _) in model_zoo.MODELS.items()})
    parser = _Parser(
        prog=PROG,
        description="Export a PyTorch model, optionally quantize it, lower it to XNNPACK\nand write a .pte file.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"models:\n{models}\n\nquantization schemes:\n{listing({name: s.description for name, s in SCHEMES.items()})}\n\n"
        "recipe types (--recipe; the values of the installed executorch's XNNPackRecipeType):\n"
        + "".join(f"  {value}\n" for value in RECIPES) + "\n"
        "exit status: 0 success, 1 test failed or internal error, 2 bad input",
    )
    add = parser.add_argument
    add("-m", "--model", required=True, metavar="NAME|FILE.py:FACTORY",
        help="a model listed below, or a Python file and the function in it that returns (model, example_inputs); "
        "a file that sets DECODER_CONTEXT holds decoders, compiled with a KV cache")
    add("-o", "--output-dir", default=Path("."), type=Path, metavar="DIR",
        help="where to write <model>_xnnpack_<scheme>.pte; created if missing (default: the current directory)")
    add("-q", "--quantize", default=NONE.name, choices=[NONE.name, *SCHEMES], metavar="SCHEME",
        help="none (fp32, the default) or a scheme listed below")
    add("--recipe", choices=RECIPES, metavar="TYPE",
        help="export, quantize and lower with executorch.export and this XNNPACK recipe type (listed below) "
        "instead of --quantize; the transform passes are added to it unless --no-transform-passes")
    add("--calibration-samples", type=int, metavar="N",
        help="inputs to calibrate static schemes and recipe types with: the example inputs, then random inputs like them "
        f"(default: {DEFAULT_CALIBRATION_SAMPLES})")
    add("--no-transform-passes", dest="transform_passes", action="store_false",
        help="skip the XNNPACK transform passes, to see what they change")
    add("--test-after-export", action="store_true",
        help="run the .pte on the ExecuTorch runtime and compare it with eager PyTorch")
    add("--atol", type=float, help=f"absolute tolerance of the test (default: {FP32_TOLERANCE[0]:g} for fp32; "
        f"none when quantized: then the SQNR must reach {MIN_SQNR_DB:g} dB)")
    add("--rtol", type=float,
        help=f"relative tolerance of the test (default: {FP32_TOLERANCE[1]:g} for fp32; 0 when quantized "
        "and --atol is given)")
    add("--etrecord", type=Path, metavar="PATH", help="also write an ETRecord, for the ExecuTorch devtools' Inspector")
    add("-v", "--verbose", action="store_true",
        help="show the XNNPACK partitioner's debug log and the libraries' own messages")
    add("--traceback", action="store_true", help="on error, print the Python traceback before the one-line message")
    return parser


def check_options(args: argparse.Namespace) -> None:
    """Reject option combinations that cannot mean what the user wants, before any work."""
    if args.recipe is not None:
        if scheme_named(args.quantize).quantized:
            raise UsageError(f"--recipe {args.recipe} quantizes as its type says; drop --quantize {args.quantize}")
        if args.etrecord is not None:
            raise UsageError("--etrecord is not available with --recipe")
        static = "_static_" in args.recipe
        if args.calibration_samples is None and static:
            args.calibration_samples = DEFAULT_CALIBRATION_SAMPLES
        elif args.calibration_samples is not None and not static:
            raise UsageError(f"--calibration-samples applies to static recipe types; --recipe {args.recipe} "
                             "calibrates nothing")
        if args.calibration_samples is not None and args.calibration_samples < 1:
            raise UsageError(f"--calibration-samples must be at least 1, not {args.calibration_samples}")
    elif args.calibration_samples is not None:
        if not scheme_named(args.quantize).needs_calibration:
            raise UsageError(
                f"--calibration-samples applies to {' and '.join(STATIC_SCHEMES)}; "
                f"--quantize {args.quantize} calibrates nothing"
            )
        if args.calibration_samples < 1:
            raise UsageError(f"--calibration-samples must be at least 1, not {args.calibration_samples}")
    elif scheme_named(args.quantize).needs_calibration:
        args.calibration_samples = DEFAULT_CALIBRATION_SAMPLES
    try:
        model_zoo.check(args.model)
    except model_zoo.ModelError as error:
        raise UsageError(str(error)) from error
    for option in ("atol", "rtol"):
        value = getattr(args, option)
        if value is None:
            continue
        if not args.test_after_export:
            raise UsageError(f"--{option} sets the tolerance of --test-after-export, which was not given")
        if not value >= 0:  # also rejects nan
            raise UsageError(f"--{option} must be zero or positive, not {value:g}")


def check_outputs(args: argparse.Namespace) -> None:
    """Create the output directories and prove them writable, before any slow step."""
    if args.etrecord is not None and args.etrecord.is_dir():
        raise UsageError(f"--etrecord {args.etrecord} is a directory; give a file name")
    outputs = [(args.output_dir, "the .pte")] + ([(args.etrecord.parent, "the ETRecord")] if args.etrecord else [])
    for directory, what in outputs:
        try:
            if directory.exists() and not directory.is_dir():
                raise NotADirectoryError(20, "Not a directory")
            directory.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=directory).close()
        except OSError as error:
            raise UsageError(f"cannot write {what} to {directory}: {error.strerror}") from error


def write_atomically(path: Path, write: Callable[[Any], None]) -> None:
    """Call ``write(file)`` on a temporary file next to *path*, then rename it to *path* (atomic: readers see
    the old file or the new one; a failure or Ctrl-C part-way leaves neither a partial file nor the temporary one)."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
        # mkstemp creates a private file (0600); give it the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


class Progress:
    """Numbered step lines: a step's name as it starts, its time when it ends."""

    def __init__(self, total: int, verbose: bool) -> None:
        self.total, self.number, self.verbose = total, 0, verbose

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        self.number += 1
        # With --verbose, libraries log during the step: end the line first.
        print(f"[{self.number}/{self.total}] {label:<44}", end="\n" if self.verbose else "", flush=True)
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            if not self.verbose:  # end the interrupted line, so the error starts its own
                print(flush=True)
            raise
        print(f"{'      done in' if self.verbose else ''}{time.perf_counter() - start:6.1f} s", flush=True)


@contextlib.contextmanager
def _silenced(enabled: bool) -> Iterator[None]:
    """Hide what a step writes to stderr, from Python or, on file descriptor 2, from C++: a failed capture's
    partial graph, the runtime's CPU probing (``Failed to open midr file``). The one-line error says what matters."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _model_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost traceback frame in the model's own code, not in a library or this module."""
    paths = sysconfig.get_paths()
    libraries = tuple({paths["stdlib"], paths["purelib"], paths["platlib"]})
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame in reversed(traceback.extract_tb(current.__traceback__)):
            name = frame.filename
            if not (name.startswith("<") or name == __file__ or name.startswith(libraries)):
                return frame
        current = current.__cause__ or current.__context__
    return None


def export_error_message(error: BaseException) -> str:
    """One line: where in the model export failed, and torch's reason."""
    where = ""
    frame = _model_frame(error)
    if frame is not None:
        shown = display(frame.filename)
        code = f' "{frame.line.strip()}"' if frame.line else ""
        where = f" at {shown}:{frame.lineno}, in {frame.name}:{code}"
    return f"torch.export cannot capture the model{where}; {one_line(error)}"


def delegation_table(graph_module: Any) -> list[str]:
    """Lines of a table: each operator's nodes inside XNNPACK and left outside it, counted by
    :mod:`xnnguide.core.delegation` (not the ``getitem`` nodes that unpack a delegate's outputs)."""
    inside, outside = ops_inside_delegates(graph_module), ops_outside_delegates(graph_module)
    rows = [(name, inside[name], outside[name]) for name in sorted(inside.keys() | outside.keys())]
    width = max([len("operator"), *(len(name) for name, _, _ in rows)])
    lines = [f"  {'operator':<{width}}  {'XNNPACK':>8}  {'outside':>8}"]
    lines += [f"  {name:<{width}}  {a:>8}  {b:>8}" for name, a, b in rows]
    lines.append(f"  {'total':<{width}}  {sum(inside.values()):>8}  {sum(outside.values()):>8}")
    return lines


def _export(model: Any, example_inputs: tuple[Any, ...], verbose: bool, context: int | None) -> Any:
    # A decoder takes 1 to `context` tokens a call: the prompt, then one at a time.
    dynamic_shapes = ({1: torch.export.Dim("tokens", min=1, max=context)}, None) if context else None
    try:
        with torch.no_grad(), _silenced(not verbose):  # no autograd around the cache's in-place writes
            return torch.export.export(model, example_inputs, dynamic_shapes=dynamic_shapes)
    except Exception as error:
        raise UsageError(export_error_message(error)) from error


def _quantize(args: argparse.Namespace, model: Any, example_inputs: tuple[Any, ...]) -> Any:
    # Without calibration inputs, int8-dynamic observes its weights on the example inputs; 8da4w needs none.
    static = scheme_named(args.quantize).needs_calibration
    calibration = model_zoo.calibration_inputs(example_inputs, args.calibration_samples) if static else []
    try:
        # The PT2E schemes export the model first: a failed capture is reported as in _export.
        with torch.no_grad(), _silenced(not args.verbose):
            return quantize(model, example_inputs, args.quantize, calibration)
    except Exception as error:
        marker = f"{os.sep}torch{os.sep}export{os.sep}"
        if any(marker in frame.filename for frame in traceback.extract_tb(error.__traceback__)):
            raise UsageError(export_error_message(error)) from error
        raise UsageError(f"quantizing with {args.quantize} failed: {one_line(error)}") from error


def _lower(args: argparse.Namespace, exported: Any) -> Any:
    try:
        return to_edge_transform_and_lower(
            exported,
            transform_passes=get_transform_passes() if args.transform_passes else None,
            partitioner=[XnnpackPartitioner(verbose=args.verbose)],
            generate_etrecord=args.etrecord is not None,
        )
    except Exception as error:
        raise UsageError(f"lowering to XNNPACK failed: {one_line(error)}") from error


def _lower_with_recipe(args: argparse.Namespace, model: Any, example_inputs: tuple[Any, ...]) -> tuple[Any, Any, Any]:
    """``executorch.export`` with the recipe of ``--recipe``, up to lowering; serialisation is left to the
    caller, as in the hand flow. Returns the lowered program, the eager model it must match (the quantized
    one, when the type quantizes) and the recipe's ``ExecutorchBackendConfig``."""
    from executorch.export import ExportRecipe, StageType, export

    recipe = ExportRecipe.get_recipe(RECIPES[args.recipe])
    if args.transform_passes:  # the XNNPACK recipes ship without them
        recipe.lowering_recipe.edge_transform_passes = [lambda method_name, program: get_transform_passes()]
    # Stop after lowering: serialising rewrites the lowered graph, which the delegation table reads.
    recipe.pipeline_stages = [StageType.SOURCE_TRANSFORM, StageType.QUANTIZE, StageType.TORCH_EXPORT,
                              StageType.TO_EDGE_TRANSFORM_AND_LOWER]
    count = args.calibration_samples
    inputs = model_zoo.calibration_inputs(example_inputs, count) if count else [example_inputs]
    try:
        with torch.no_grad(), _silenced(not args.verbose), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "This API ... is experimental", on every call
            session = export(model, inputs, recipe)
    except Exception as error:
        raise UsageError(f"executorch.export with {args.recipe} failed: {one_line(error)}") from error
    reference = session.get_stage_artifacts()[StageType.QUANTIZE].data["forward"]
    return session.get_edge_program_manager(), reference, recipe.executorch_backend_config


def compile_model(args: argparse.Namespace) -> None:
    """Run the whole flow for parsed, checked *args*, printing as it goes."""
    check_outputs(args)
    scheme = scheme_named(args.quantize)
    label = scheme.name if scheme.quantized else "fp32"
    known = model_zoo.MODELS.get(args.model)
    print(f"Compiling {args.model}" + (f": {known[0]}" if known else ""))
    if args.recipe:
        label = args.recipe.removeprefix("xnnpack_")
        passes = "on, added to the recipe, which ships without them" if args.transform_passes else \
            "off, as the recipe ships"
        print(f"  recipe {args.recipe} (executorch.export), XNNPACK transform passes {passes}")
    else:
        print(f"  quantization {label}, XNNPACK transform passes {'on' if args.transform_passes else 'off'}")
    progress = Progress((3 if args.recipe else 4 + scheme.quantizes_eager_modules) + args.test_after_export, args.verbose)

    with progress.step("build the model"):
        try:
            name, model, example_inputs, context = model_zoo.load(args.model)
        except model_zoo.ModelError as error:
            raise UsageError(str(error)) from error
    if context:
        if args.recipe:
            raise UsageError(f"{args.model} is a decoder: --quantize {DECODER_SCHEMES}, the LLM flow, not --recipe")
        if not scheme.suits_decoders:
            raise UsageError(f"{args.model} is a decoder: --quantize {DECODER_SCHEMES}, the LLM flow, "
                             f"not {scheme.name}")
        print(f"  decoder: a KV cache of {context} positions, 1 to {context} tokens a call")
    pte_path = args.output_dir / f"{name}_xnnpack_{label}.pte"

    # The eager model the .pte is checked against: the quantized one, if any.
    reference = model
    if args.test_after_export:  # before a torchao scheme (8da4w) changes the model in place
        calls, fp32_outputs = _calls(model, example_inputs, context)
    backend_config = ExecutorchBackendConfig(do_quant_fusion_and_const_prop=scheme.fuses_quantized_operators)
    if args.recipe:
        count = args.calibration_samples
        samples = f" ({count} calibration sample{'' if count == 1 else 's'})" if count else ""
        with progress.step(f"executorch.export{samples}"):
            edge, reference, backend_config = _lower_with_recipe(args, model, example_inputs)
    else:
        if scheme.quantizes_eager_modules:  # torchao quantizes the eager modules; export comes after
            with progress.step("quantize (torchao)"):
                reference = _quantize(args, model, example_inputs)
        if not scheme.quantizes_exported_graph:
            with progress.step("export (torch.export)"):
                exported = _export(reference, example_inputs, args.verbose, context)
        else:  # PT2E exports the model, quantizes the graph, and exports the result for lowering
            count = args.calibration_samples
            samples = f" ({count} calibration sample{'' if count == 1 else 's'})" if scheme.needs_calibration else ""
            with progress.step(f"export and quantize{samples}"):
                reference = _quantize(args, model, example_inputs)
                exported = _export(reference, example_inputs, args.verbose, context)
        # Refuse a "quantized" program in which the scheme found nothing to quantize.
        targets = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
        if scheme.quantized and not any("quantize" in target for target in targets):
            raise UsageError(f"--quantize {scheme.name} found nothing to quantize in {name}; "
                             "its layers are not ones this scheme quantizes")
        with progress.step("lower to XNNPACK"):
            edge = _lower(args, exported)
    # Counted before to_executorch(), which adds memory-planning nodes to the graph.
    graph_module = edge.exported_program().graph_module
    subgraphs, table = delegate_calls(graph_module), delegation_table(graph_module)

    with progress.step("serialize"):
        # 8da4w leaves quantized embeddings outside XNNPACK, as torchao's
        # dequantize_affine feeding an embedding. ExecuTorch has no kernel for
        # that pair; quant fusion rewrites it into its own embedding_4bit.
        # Silenced: its warning that a mutated buffer's initial values are not kept; a decoder writes
        # each position of its cache before it reads it.
        with _silenced(not args.verbose):
            program = edge.to_executorch(backend_config)
        write_atomically(pte_path, program.write_to_file)
        if args.etrecord is not None:
            write_atomically(args.etrecord, program.get_etrecord().save)

    print(f"\nDelegation ({'with' if args.transform_passes else 'without'} transform passes): "
          f"{subgraphs} XNNPACK subgraph{'' if subgraphs == 1 else 's'}")
    print("\n".join(table))
    print(f"\nWrote {pte_path} ({pte_path.stat().st_size:,} bytes)")
    if args.etrecord is not None:
        print(f"Wrote {args.etrecord} ({args.etrecord.stat().st_size:,} bytes)")

    if args.test_after_export:
        print()
        steps = f"prefill, then decode {len(calls) - 1} tokens on the runtime"
        with progress.step(steps if context else "run on the ExecuTorch runtime"):
            actual = _run_pte(pte_path, calls, args.verbose)
        # fp32: --quantize none, or a recipe type that returned the model unquantized (8da4w quantizes the
        # model in place, so there the reference is the same object, quantized).
        if (reference is model) if args.recipe else not scheme.quantized:
            _check(args, pte_path, actual, fp32_outputs, None, label)
        else:  # checked against the quantized model; the distance to fp32 is only shown
            with torch.no_grad():
                expected = [leaf for call in calls for leaf in tree_leaves(reference(*call))]
            _check(args, pte_path, actual, expected, fp32_outputs, label)


def _calls(model: Any, example_inputs: tuple[Any, ...], context: int | None
           ) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """The inputs of each call the test makes, and the leaves of *model*'s outputs, in one pass: the example
    inputs, then for a decoder one call a position until its cache is full, each with the greedy next token."""
    calls = [example_inputs]
    with torch.no_grad():
        outputs = [model(*example_inputs)]
        if context:
            tokens, input_pos = example_inputs
            for position in range(int(input_pos) + tokens.shape[1], context):
                calls.append((outputs[-1][:, -1:].argmax(-1).to(tokens.dtype), input_pos.new_tensor([position])))
                outputs.append(model(*calls[-1]))
    return calls, [leaf for output in outputs for leaf in tree_leaves(output)]


def _run_pte(pte_path: Path, calls: list[tuple[Any, ...]], verbose: bool) -> list[Any]:
    from executorch.runtime import Runtime

    try:
        with _silenced(not verbose):
            runtime = Runtime.get()
            # Registers ExecuTorch's quantized kernels (8da4w's embedding_4bit) with that runtime.
            import executorch.kernels.quantized  # noqa: F401

            # The method lives in the program: keep both referenced while it runs.
            program = runtime.load_program(pte_path)
            method = program.load_method("forward")
            return [leaf for call in calls for leaf in tree_leaves(method.execute(list(call)))]
    except Exception as error:
        raise CheckFailed(f"the ExecuTorch runtime cannot run {pte_path}: {one_line(error)}") from error


def _max_abs_error(actual: Sequence[Any], expected: Sequence[Any]) -> float:
    if len(actual) != len(expected):
        raise CheckFailed(f"the .pte returned {len(actual)} outputs, eager PyTorch {len(expected)}")
    for got, want in zip(actual, expected):
        if tuple(got.shape) != tuple(want.shape):
            raise CheckFailed(f"the .pte returned shape {tuple(got.shape)}, eager PyTorch {tuple(want.shape)}")
    return max(((got.double() - want.double()).abs().max().item() for got, want in zip(actual, expected)
                if want.numel()), default=0.0)


def _check(args: argparse.Namespace, pte_path: Path, actual: list[Any], expected: list[Any],
           fp32_outputs: list[Any] | None, label: str) -> None:
    """Compare the .pte's outputs with eager PyTorch; raise CheckFailed over tolerance."""
    quantized = fp32_outputs is not None
    reference = f"the {label} model in eager PyTorch" if quantized else "eager fp32"
    by_sqnr = quantized and args.atol is None and args.rtol is None
    atol = args.atol if args.atol is not None else 0.0 if quantized else FP32_TOLERANCE[0]
    rtol = args.rtol if args.rtol is not None else 0.0 if quantized else FP32_TOLERANCE[1]
    error = _max_abs_error(actual, expected)
    largest = max((t.double().abs().max().item() for t in expected if t.numel()), default=0.0)
    if by_sqnr:
        sqnr = _sqnr(actual, expected)
        passed = sqnr >= MIN_SQNR_DB
        bound = f"SQNR {sqnr:.1f} dB, at least {MIN_SQNR_DB:g} dB"
    else:
        passed = all(torch.isclose(got.double(), want.double(), rtol, atol).all() for got, want in zip(actual, expected))
        bound = f"atol {atol:.1e}, rtol {rtol:.1e}"
    print(f"  max abs error {error:.1e} against {reference} (largest output {largest:.2f}; "
          f"{bound}): {'passed' if passed else 'FAILED'}")
    if quantized:
        print(f"  max abs error {_max_abs_error(actual, fp32_outputs):.1e} against eager fp32: "
              "what quantization costs, not checked")
    if not passed:
        over = f"an SQNR of {sqnr:.1f} dB, under {MIN_SQNR_DB:g} dB" if by_sqnr else \
            f"up to {error:.1e}, over atol {atol:.1e} + rtol {rtol:.1e}"
        raise CheckFailed(f"the .pte differs from {reference} by {over}; {pte_path} is kept for inspection")


def _sqnr(actual: Sequence[Any], expected: Sequence[Any]) -> float:
    """The signal-to-quantization-noise ratio of *actual* against *expected*, in dB, over all outputs."""
    from torchao.quantization.utils import compute_error

    flat = [(got.double().flatten(), want.double().flatten()) for got, want in zip(actual, expected) if want.numel()]
    return compute_error(torch.cat([want for _, want in flat]), torch.cat([got for got, _ in flat])).item()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the compiler on *argv* (default: ``sys.argv[1:]``); return the exit status."""
    args = None
    partitioner_log = logging.getLogger("executorch.backends.xnnpack.partition.xnnpack_partitioner")
    level = partitioner_log.level
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_:  # --help
            return int(exit_.code or 0)
        check_options(args)
        compile_model(args)
    except UsageError as error:
        return _report(error, args, EXIT_USAGE)
    except CheckFailed as error:
        return _report(error, args, EXIT_FAILED)
    except KeyboardInterrupt:
        print(f"{NAME}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        message = f"internal error: {one_line(error)}"
        if args is None or not args.traceback:
            message += " (--traceback shows where)"
        return _report(Exception(message), args, EXIT_FAILED, cause=error)
    finally:
        # --verbose raises the partitioner's log level for the whole process;
        # put it back for whoever calls main() next.
        partitioner_log.setLevel(level)
    return EXIT_OK


def _report(error: BaseException, args: argparse.Namespace | None, status: int,
            cause: BaseException | None = None) -> int:
    sys.stdout.flush()
    if args is not None and args.traceback:
        traceback.print_exception(cause or error.__cause__ or error, file=sys.stderr)
    print(f"{NAME}: error: {error}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
