"""The precisions (quantisation schemes) a model variant comes in, and the arithmetic an engine
runs natively: the one home of their names, for the profile schema, the host's quantiser and the
model registry. Standard library only.

FP32 is the float model; FP16 halves its weights; DR8 is dynamic-range int8 (int8 weights, float
activations); FX8 is full-integer int8 with float inputs and outputs; FFX8 is full-integer
throughout (CARIn Table 1).
"""

from __future__ import annotations

from typing import Literal, get_args

Precision = Literal["FP32", "FP16", "DR8", "FX8", "FFX8"]

#: Every precision, in the order profiles and reports list them.
PRECISIONS: tuple[Precision, ...] = get_args(Precision)

#: The arithmetic an engine runs natively, and a delegate's precision.
Arithmetic = Literal["fp32", "fp16", "int8"]
