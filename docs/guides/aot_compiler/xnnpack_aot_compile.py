"""Compile a PyTorch model to an ExecuTorch program (.pte) that runs on XNNPACK.

Needs only the public packages: pip install executorch torchvision
(executorch brings torch and torchao). Examples:

    python xnnpack_aot_compile.py --model mobilenet_v2
    python xnnpack_aot_compile.py --model my_model.pt2 --quantize int8-static \\
        --calibration-data samples.pt --output my_model_int8.pte

A model is a torchvision model name or a file written by torch.export.save.
The .pte appears only once it is complete: a failed run leaves no file.
"""

import argparse
import contextlib
import os
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

import torch

PROG = Path(__file__).name
QUANTIZE_CHOICES = ["fp32", "int8-static", "int8-dynamic"]


class BadInput(Exception):
    """Input the script cannot use: reported as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints its usage block too; one line is enough
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_args(argv):
    parser = OneLineParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, metavar="NAME_OR_FILE",
                        help="a torchvision model (mobilenet_v2, resnet18, ...) "
                        "or a .pt2 file written by torch.export.save")
    parser.add_argument("--weights", metavar="NAME",
                        help="torchvision weights for a named model, e.g. DEFAULT "
                        "(downloaded once); without it the weights are random")
    parser.add_argument("--input-shape", metavar="N,C,H,W",
                        help="example input of a named model (default: 1,3,224,224)")
    parser.add_argument("--quantize", default="fp32", metavar="MODE",
                        help="fp32 (the default); int8-static: int8 activations and "
                        "weights, ranges calibrated ahead of time; int8-dynamic: int8 "
                        "weights, activation ranges measured as it runs")
    parser.add_argument("--calibration-data", type=Path, metavar="FILE.pt",
                        help="for int8-static: a list of input tuples saved with "
                        "torch.save, representative of real inputs")
    parser.add_argument("--output", type=Path, metavar="FILE.pte",
                        help="where to write the program "
                        "(default: <model>_xnnpack_<mode>.pte)")
    parser.add_argument("--traceback", action="store_true",
                        help="print the Python traceback of an error")
    args = parser.parse_args(argv)
    if args.quantize not in QUANTIZE_CHOICES:
        parser.error("--quantize takes fp32, int8-static or int8-dynamic")
    static = args.quantize == "int8-static"
    if static != (args.calibration_data is not None):
        parser.error("--calibration-data goes with --quantize int8-static, and only it")
    is_file = args.model.endswith(".pt2")
    if is_file and (args.weights or args.input_shape):
        parser.error("--weights and --input-shape are for named models, not .pt2 files")
    if args.output is None:
        args.output = Path(f"{Path(args.model).stem}_xnnpack_{args.quantize}.pte")
    if args.output.suffix != ".pte":
        parser.error(f"--output must end in .pte: {args.output}")
    return args


def load_model(args):
    """The exported program and its example inputs."""
    if args.model.endswith(".pt2"):
        if not Path(args.model).is_file():
            raise BadInput(f"no such file: {args.model}")
        if not zipfile.is_zipfile(args.model):  # torch would log a traceback first
            raise BadInput(f"{args.model} is not a file torch.export.save wrote")
        try:
            program = torch.export.load(args.model)
        except Exception as error:
            raise BadInput(f"cannot load {args.model}: {error}")
        if program.example_inputs is None:
            raise BadInput(f"{args.model} has no example inputs; export it with them")
        return program, program.example_inputs[0]
    import torchvision

    if args.model not in torchvision.models.list_models(module=torchvision.models):
        raise BadInput(f"{args.model}: no torchvision model of that name")
    shape_text = args.input_shape or "1,3,224,224"
    try:
        shape = [int(size) for size in shape_text.split(",")]
    except ValueError:
        raise BadInput(f"--input-shape takes integers, like 1,3,224,224: {shape_text}")
    try:  # a name of torchvision's, checked before anything is downloaded
        known = torchvision.models.get_model_weights(args.model)
        weights = args.weights and known[args.weights]
    except KeyError:
        raise BadInput(f"{args.model} has no weights {args.weights!r}; try DEFAULT")
    torch.manual_seed(0)  # random weights and inputs are the same on every run
    model = torchvision.models.get_model(args.model, weights=weights).eval()
    example_inputs = (torch.randn(shape),)
    return torch.export.export(model, example_inputs), example_inputs


def load_calibration(path):
    if not path.is_file():
        raise BadInput(f"no such file: {path}")
    try:
        samples = torch.load(path, weights_only=True)
    except Exception as error:
        raise BadInput(f"cannot load {path}: {error}")
    if not isinstance(samples, (list, tuple)) or not samples:
        raise BadInput(f"{path} must hold a non-empty list of input tuples")
    return [tuple(s) if isinstance(s, (list, tuple)) else (s,) for s in samples]


def quantize(program, example_inputs, mode, samples):
    """The program with XNNPACK's int8 quantization (PT2E), exported again."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    config = get_symmetric_quantization_config(
        is_per_channel=True, is_dynamic=mode == "int8-dynamic"
    )
    prepared = prepare_pt2e(program.module(), XNNPACKQuantizer().set_global(config))
    with torch.no_grad():
        for sample in samples or [example_inputs]:  # dynamic: one run observes weights
            prepared(*sample)
    quantized = convert_pt2e(prepared)
    if not any("quantize_per" in str(node.target) for node in quantized.graph.nodes):
        raise BadInput(f"--quantize {mode} found nothing to quantize in this model")
    return torch.export.export(quantized, tuple(example_inputs))


def lower(program):
    """The ExecuTorch program, with every part XNNPACK supports delegated to it."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
        XnnpackPartitioner,
    )
    from executorch.backends.xnnpack.utils.configs import get_transform_passes
    from executorch.devtools.backend_debug import get_delegation_info
    from executorch.exir import to_edge_transform_and_lower

    edge = to_edge_transform_and_lower(
        program,
        transform_passes=get_transform_passes(),
        partitioner=[XnnpackPartitioner()],
    )
    info = get_delegation_info(edge.exported_program().graph_module)
    by_operator = info.delegation_by_operator.values()
    outside = ", ".join(f"{op.op_type} {op.non_delegated}"
                        for op in by_operator if op.non_delegated)
    subgraphs = info.num_delegated_subgraphs
    print(f"XNNPACK: {info.num_delegated_nodes} nodes in {subgraphs} "
          f"subgraph{'' if subgraphs == 1 else 's'}; outside: "
          f"{info.num_non_delegated_nodes}" + (f" ({outside})" if outside else ""))
    return edge.to_executorch()


@contextlib.contextmanager
def file_written_on_success(path):
    """A temporary file beside *path*: renamed to it on success, else deleted."""
    if not path.parent.is_dir():
        raise BadInput(f"no folder {path.parent}/ to write {path.name} in")
    if path.is_dir():
        raise BadInput(f"{path} is a folder")
    try:
        handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.",
                                             delete=False)
    except OSError as error:
        raise BadInput(f"cannot write {path}: {error.strerror}")
    try:
        with handle:
            yield handle
        umask = os.umask(0)  # the usual mode of a new file, not mkstemp's 0600
        os.umask(umask)
        os.chmod(handle.name, 0o666 & ~umask)
        os.replace(handle.name, path)
    except BaseException:
        os.unlink(handle.name)
        raise


def compile_model(args):
    with file_written_on_success(args.output) as output:  # fails early if unwritable
        samples = args.calibration_data and load_calibration(args.calibration_data)
        program, example_inputs = load_model(args)
        if args.quantize != "fp32":
            program = quantize(program, example_inputs, args.quantize, samples)
        output.write(lower(program).buffer)
    print(f"wrote {args.output} ({args.output.stat().st_size:,} bytes)")


def main(argv=None):
    args = parse_args(argv)
    try:
        compile_model(args)
    except Exception as error:
        if args.traceback:
            traceback.print_exc()
        message = str(error).strip().split("\n")[0]
        if isinstance(error, BadInput):
            print(f"{PROG}: error: {message}", file=sys.stderr)
            return 2
        print(f"{PROG}: error: {type(error).__name__}: {message} "
              "(--traceback shows where)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
