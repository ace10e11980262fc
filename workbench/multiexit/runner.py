"""Run an exported multi-exit net segment by segment with onnxruntime, evaluating the exit
criteria after each exit (Delen's conditional runtime execution). numpy + onnxruntime only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..runtime.criteria import ExitState
from ..runtime.multiexit import open_session, run_exits, softmax

__all__ = ["SegmentedNet", "open_session", "softmax"]


class SegmentedNet:
    """An exported multi-exit net: one onnxruntime session per exit segment.

    Args:
        folder: Where :func:`workbench.multiexit.training.export_onnx` wrote the segments.
        files: The segment file names, in exit order.
        accuracy: Each exit's profiled accuracy (for ``accuracy`` criteria), optional.
        flops: Cumulative FLOPs per exit (for ``flops_used`` criteria), optional.
        threads: onnxruntime intra-op threads.
    """

    def __init__(self, folder: str | Path, files: Sequence[str], *,
                 accuracy: Sequence[float] | None = None, flops: Sequence[float] | None = None,
                 threads: int = 1) -> None:
        self.sessions = [open_session(Path(folder) / f, threads) for f in files]
        n = len(self.sessions)
        self.accuracy = list(accuracy) if accuracy is not None else [0.0] * n
        self.flops = list(flops) if flops is not None else [0.0] * n
        self.threads = threads

    @property
    def n_exits(self) -> int:
        return len(self.sessions)

    def run(self, x: np.ndarray, should_exit: Callable[[ExitState], bool] | None = None, *,
            waited_ms: float = 0.0, cap_ms: float = float("inf"),
            segment_ms: Sequence[float] | None = None) -> tuple[np.ndarray, int, ExitState]:
        """One sample (batch 1, channels first) through the segments until ``should_exit``
        holds (None: every exit). ``response_time`` counts from the request's arrival
        (``waited_ms`` in the queue before this call). With ``cap_ms`` (a resource limiter's
        remaining budget) and ``segment_ms`` (what each segment is expected to cost), the run
        also exits before a segment that would take its busy time past the cap. Returns the
        softmax, the 0-based exit and the last state (its response_time includes the wait)."""
        p, k, state, _ = run_exits(self.sessions, x, should_exit, accuracy=self.accuracy,
                                   flops=self.flops, threads=self.threads, waited_ms=waited_ms,
                                   cap_ms=cap_ms,
                                   segment_ms=segment_ms)
        return p, k, state

    def run_all(self, x: np.ndarray) -> tuple[list[np.ndarray], list[float]]:
        """Every exit's softmax for one sample and the cumulative time (ms) to each exit."""
        feat = np.ascontiguousarray(x, dtype=np.float32)
        probs, times = [], []
        t0 = time.perf_counter()
        for s in self.sessions:
            feat, logits = s.run(None, {"x": feat})
            times.append((time.perf_counter() - t0) * 1e3)
            probs.append(softmax(logits[0]))
        return probs, times

