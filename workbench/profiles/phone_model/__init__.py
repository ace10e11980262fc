"""Analytical model of the papers' phones: modelled (not measured) device profiles.

Phones are not available to this project, so the profiles of the Pixel 7, Galaxy S20 FE, Galaxy
A71 and Xperia C5 are computed by the model below from published chip specs. Every number it uses
lives in ``workbench/data/phones/model_parameters.json`` with a note on its source; nothing is a
constant in this file. The model, per configuration (model variant x engine x options):

* **Latency.** ``L = invoke + per-op overhead + compute + memory traffic (+ I/O transfer and CPU
  fallback for delegates)``. CPU compute = workload / effective rate, where each core's rate is
  ``clock x FLOPs-per-cycle(precision) x kernel efficiency``, per operator: the family's dense
  (GEMM-like) and depthwise multiply-adds at the kernel library's (builtin or XNNPACK)
  efficiency for each class, combined harmonically (:func:`kernel_efficiency`); threads go to the
  fastest cores first and their rates combine as ``lb * sum + (1 - lb) * n * min`` (work-splitting
  balance) divided by ``1 + sync * (n - 1)``. Precisions the CPU does not run natively fall back
  (FP16 is dequantised to FP32 at load; DR8 uses hybrid kernels). Delegates (GPU, NPU, DSP) run
  the fraction of the graph they support at ``peak(precision path) x efficiency`` and hand the rest
  to the CPU with a cost per partition; a GPU pays a fixed cost per kernel (one per operator).
* **Variability.** Latency samples are log-normal with a coefficient of variation that grows with
  threads and with LITTLE cores; std, p50/p90/p99 and the expected min/max of 100 runs follow.
* **Memory** (peak footprint MF): runtime base + the mmapped model file + weights as executed
  (XNNPACK's repacked copy, FP16 dequantised to FP32, a delegate's own copy) + activation arena +
  delegate runtime.
* **Energy** E = (static power + power of the engines in use) x latency.

The parts: :mod:`.device` (parameters, specs, a device as modelled), :mod:`.variants` (the
papers' model variants), :mod:`.engines` (the model's terms per engine), :mod:`.build` (modelled
profiles).
"""

from .build import THREADS as THREADS
from .build import XNNPACK as XNNPACK
from .build import build_oodin_profile as build_oodin_profile
from .build import build_profile as build_profile
from .build import parameters_digest as parameters_digest
from .build import regenerate as regenerate
from .device import DEVICES as DEVICES
from .device import ModelDevice as ModelDevice
from .device import load_parameters as load_parameters
from .device import load_spec as load_spec
from .device import model_device as model_device
from .device import paper_spec as paper_spec
from .engines import kernel_efficiency as kernel_efficiency
from .engines import model_cpu as model_cpu
from .engines import model_delegate as model_delegate
from .engines import public_calibration as public_calibration
from .engines import size_mb as size_mb
from .variants import OODIN_DEVICES as OODIN_DEVICES
from .variants import OODIN_FAMILIES as OODIN_FAMILIES
from .variants import OODIN_RATES as OODIN_RATES
from .variants import USE_CASES as USE_CASES
from .variants import Variant as Variant
from .variants import oodin_task as oodin_task
from .variants import oodin_variants as oodin_variants
from .variants import paper_variants as paper_variants
