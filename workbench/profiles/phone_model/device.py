"""The model's inputs: its parameters (``model_parameters.json``), the papers' phones' specs
and any device's spec, and a device as the model runs it (its cores fastest first, engines and
calibration)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..schema import Device

#: The devices the model knows (their parameters are in model_parameters.json).
DEVICES = ("pixel7", "s20fe", "a71", "xperia-c5")


def _param_text() -> str:
    return resources.files("workbench.data.phones").joinpath("model_parameters.json").read_text(
        "utf-8")


@lru_cache(maxsize=1)
def _default_parameters() -> dict[str, Any]:
    return json.loads(_param_text())


def load_parameters(path: str | Path | None = None) -> dict[str, Any]:
    """The model's parameters: the packaged file, or a copy of it the user edited."""
    if path is None:
        return json.loads(json.dumps(_default_parameters()))
    from ...fileio import parse_json, read_text

    # A user's file: bounded, strictly decoded, duplicate keys refused (fileio's one reader).
    data = parse_json(read_text(path, what="phone-model parameters file"), file=path)
    if not isinstance(data, dict):
        raise InputError("a parameters file holds a JSON object", file=path)
    _check_like(data, _default_parameters(), "", path)
    return data


def _json_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true or false"
    if isinstance(v, (int, float)):
        return "a number"
    for kind, what in ((str, "a string"), (list, "a list"), (dict, "a JSON object")):
        if isinstance(v, kind):
            return what
    return None  # null in the packaged file: any value


def _check_like(value: Any, ref: Any, where: str, file: str | Path) -> None:
    """An edited parameters file has the packaged file's shape: every key it has (a device the
    copy leaves out apart: that device is then modelled from its spec alone), each value of the
    same JSON kind, numbers finite. Values are the user's to change; the model reads every key,
    so a missing or mistyped one would otherwise surface as a KeyError deep in the model."""
    want = _json_kind(ref)
    if want and (_json_kind(value) != want
                 or (isinstance(value, float) and not math.isfinite(value))):
        shown = value if value is None or isinstance(value, (int, float, str)) \
            else f"a {type(value).__name__}"
        raise InputError(f"must be {want}, as in the packaged file", file=file,
                         where=where or "(top level)", value=shown)
    if isinstance(ref, dict):
        for k, r in ref.items():
            place = f"{where}.{k}" if where else k
            if k in value:
                _check_like(value[k], r, place, file)
            elif where != "devices":
                raise InputError("missing: the model reads it (copy it from "
                                 "workbench/data/phones/model_parameters.json)", file=file,
                                 where=place)


def paper_spec(device: str) -> Device:
    """The spec of one of the papers' phones (``workbench/data/phones/specs/<device>.json``), in
    the form of a profile's ``device`` section: what ``--spec`` takes for any other device."""
    if device not in DEVICES:
        raise InputError(f"unknown device; the phone model knows {', '.join(DEVICES)} (or give "
                         "any device's spec with --spec)", value=device)
    text = resources.files("workbench.data.phones").joinpath("specs", f"{device}.json").read_text(
        "utf-8")
    return Device.model_validate_json(text)


def load_spec(path: str | Path) -> Device:
    """A device spec file: a profile's ``device`` section, alone or inside ``{"device": ...}``
    (so a profile can be given too). A bad file is one InputError naming the file and field."""
    from pydantic import ValidationError

    from ...fileio import parse_json, read_text
    from ..store import error_from_validation

    data = parse_json(read_text(path, what="device spec"), file=path)
    if isinstance(data, dict) and isinstance(data.get("device"), dict):
        data = data["device"]
    if not isinstance(data, dict):
        raise InputError("a device spec is a JSON object (a profile's device section)", file=path)
    try:
        return Device.model_validate(data)
    except ValidationError as e:  # one line naming the file, JSON path and value, as profiles do
        raise error_from_validation(e, file=path) from None


@dataclass(frozen=True)
class ModelDevice:
    """A device as the model runs it: its spec, every core (type, GHz) fastest first, and the
    parameters the model needs, derived from the spec and, for the papers' phones, overlaid with
    what was calibrated for them (``calibrated``)."""

    spec: Device
    cores: tuple[tuple[str, float], ...]
    params: dict[str, Any]
    calibrated: bool


def model_device(device: str | Device, P: dict[str, Any]) -> ModelDevice:
    """Resolve a papers' phone by name (its spec and its calibration) or any spec (defaults)."""
    spec = paper_spec(device) if isinstance(device, str) else device
    cal = P["devices"].get(device) if isinstance(device, str) else None
    known = [k for k in P["core_types"] if k != "source"]
    if not spec.cpu_clusters:
        raise InputError("a device spec needs cpu_clusters (core, count, ghz)", where="cpu_clusters")
    for i, cl in enumerate(spec.cpu_clusters):
        if cl.core not in P["core_types"] or cl.core == "source":
            raise InputError(f"unknown core type; the model knows {', '.join(known)}",
                             where=f"cpu_clusters[{i}].core", value=cl.core)
    D = P["spec_defaults"]
    governors = list(spec.governors) or list(D["governors"])
    unknown = [g for g in governors if g not in P["governors"]]
    if unknown:
        raise InputError("unknown governor; the model knows "
                         + ", ".join(k for k in P["governors"] if k != "source"),
                         where="governors", value=unknown[0])
    if spec.dram_gbps is not None:
        dram = spec.dram_gbps
    elif spec.ram_mhz is not None:
        dram = spec.ram_mhz * 2 * D["bus_bytes"] / 1e3
    else:
        raise InputError("a device spec needs dram_gbps or ram_mhz (memory traffic is modelled)",
                         where="dram_gbps")
    engines: dict[str, dict[str, Any]] = {}
    for kind, acc in (("GPU", spec.gpu), ("NPU", spec.npu), ("DSP", spec.dsp)):
        if acc is None:
            continue
        if kind == "GPU":
            fp32 = acc.fp32_gflops or (acc.fp16_gflops / 2 if acc.fp16_gflops else None)
            if fp32 is None:
                raise InputError("a GPU is modelled from its throughput: give fp32_gflops (and "
                                 "fp16_gflops if not twice that)", where="gpu.fp32_gflops")
            figures = {"fp32_gflops": fp32, "fp16_gflops": acc.fp16_gflops or 2 * fp32}
        else:
            if acc.int8_tops is None:  # modelled from its throughput, never from its name
                raise InputError(f"the {kind} is modelled from its throughput: give int8_tops (and "
                                 "fp16_tflops if it runs floats)", where=f"{kind.lower()}.int8_tops")
            figures = {"int8_tops": acc.int8_tops, "fp16_tflops": acc.fp16_tflops or 0.0}
        base = dict(D["engines"][kind])
        if kind != "GPU" and not figures["fp16_tflops"]:
            base["precisions"] = ["FX8", "FFX8"]  # integer-only accelerators
        if cal is not None:
            if kind not in cal["engines"]:
                continue
            base.update(cal["engines"][kind])
        engines[kind] = base | figures
    params = {"dram_gbps": dram, "static_power_w": D["static_power_w"],
              "variability_scale": D["variability_scale"],
              "default_governor": (D["default_governor"] if D["default_governor"] in governors
                                   else governors[0]),
              "governors": governors, "paper": ""}
    if cal is not None:
        params.update({k: v for k, v in cal.items() if k != "engines"})
    params["engines"] = engines
    cores = []
    for cl in spec.cpu_clusters:
        cores += [(cl.core, float(cl.ghz))] * int(cl.count)
    ct = P["core_types"]
    cores.sort(key=lambda c: -ct[c[0]]["fp32_flops_per_cycle"] * c[1])
    return ModelDevice(spec=spec, cores=tuple(cores), params=params, calibrated=cal is not None)

