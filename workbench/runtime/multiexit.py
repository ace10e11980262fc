"""Multi-exit operating points on the device (Delen's conditional execution).

A multi-exit configuration is one operating point (its criteria) of a stored multi-exit model:
the model's exit segments run one after another, each returning the features for the next and
its exit's logits, and the criteria are evaluated after each exit; the first exit where they
hold answers (the last one if none does). The segments are ONNX, run with onnxruntime, an
optional backend of this runtime (``pip install onnxruntime``): ``workbench.runtime`` imports
without it, and only a bundle with multi-exit designs needs it.

Points of one stored model share its loaded segments (:class:`SegmentCache`), so moving between
them loads nothing: the switch is a new criteria function. The criteria can also be replaced
while serving (:meth:`MultiExitExecutor.set_criteria`, Delen's run-time updates); the next
request uses them.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from ..power import HOST_CORE
from . import ort
from .bundle import ConfigSpec
from .criteria import ExitState, parse_criteria
from .executor import Executor, ExecutorError, Pinned, spin


def open_session(model: str | os.PathLike | bytes, threads: int = 1):
    """An onnxruntime CPU session for a segment (:func:`workbench.runtime.ort.open_session`, the
    one way ONNX models are opened), a missing onnxruntime being an ExecutorError."""
    try:
        return ort.open_session(model, threads=threads)
    except ImportError:
        raise ExecutorError("multi-exit designs run with onnxruntime, which is not installed "
                            "(pip install onnxruntime)") from None


class SegmentCache:
    """Loaded segment sessions by (segment files, threads): shared by every operating point of
    one stored model."""

    def __init__(self) -> None:
        self._sessions: dict[tuple, list[Any]] = {}
        #: What each segment takes (ms, a running mean), shared by the points: a limiter's cap
        #: stops before a segment that would not fit.
        self.segment_ms: dict[tuple, list[float]] = {}
        self._lock = threading.Lock()

    def get(self, spec: ConfigSpec, blobs: list[bytes]) -> tuple[list[Any], bool]:
        """The sessions of ``spec``'s segments, and whether they were loaded just now."""
        key = (spec.segments, spec.threads)
        with self._lock:
            s = self._sessions.get(key)
            fresh = s is None
            if s is None:
                try:
                    s = [open_session(b, spec.threads) for b in blobs]
                except ExecutorError:
                    raise
                except Exception as e:  # noqa: BLE001 - onnxruntime raises its own types
                    raise ExecutorError(f"{spec.id}: cannot load its segments: "
                                        f"{' '.join(str(e).split())[:300]}") from None
                self._sessions[key] = s
                self.segment_ms[key] = [0.0] * len(s)
            return s, fresh

    def __len__(self) -> int:
        return len(self._sessions)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run_exits(sessions: Sequence[Any], x: np.ndarray,
              should_exit: Callable[[ExitState], bool] | None, *, accuracy: Sequence[float],
              flops: Sequence[float], threads: int = 1, waited_ms: float = 0.0,
              cap_ms: float = float("inf"), segment_ms: Sequence[float] | None = None,
              learn: list[float] | None = None) -> tuple[np.ndarray, int, ExitState, bool]:
    """One sample (batch 1) through a multi-exit model's segments until ``should_exit`` holds
    (None: every exit): Delen's conditional execution, the one loop the runtime and the
    experiments share.

    ``response_time`` counts from the request's arrival (``waited_ms`` in a queue before this
    call); energy is the busy time's (``workbench.power.HOST_CORE``). With ``cap_ms`` (a
    limiter's remaining budget) and ``segment_ms`` (what each segment is expected to cost), the
    run also exits before a segment that would take its busy time past the cap; ``learn`` (a
    list, usually ``segment_ms`` itself) is updated in place with a running mean of what each
    segment took.

    Returns:
        The answering exit's softmax, its 0-based index, the state there, and whether the cap
        (not the criteria) made it answer.
    """
    feat = np.ascontiguousarray(x, dtype=np.float32)
    t0 = prev = time.perf_counter()
    last = len(sessions) - 1
    feed = {"x": feat}
    for k, s in enumerate(sessions):
        feat, logits = s.run(None, feed)
        feed["x"] = feat
        # The top softmax value is 1 / sum(exp(z - max z)): the criteria read only that, so the
        # softmax itself is built at the answering exit alone (per exit it was a third of the
        # all-exit overhead that is not the model's).
        z = logits[0]
        e = np.exp(z - z.max())
        total = float(e.sum())
        now = time.perf_counter()
        if learn is not None:
            d = (now - prev) * 1e3
            learn[k] = d if learn[k] == 0.0 else 0.9 * learn[k] + 0.1 * d
            prev = now
        busy = (now - t0) * 1e3
        state = ExitState(busy + waited_ms, 1.0 / total, accuracy[k],
                          HOST_CORE.busy_mj(busy, threads), flops[k], k + 1)
        if k == last or (should_exit is not None and should_exit(state)):
            return e / total, k, state, False
        if segment_ms is not None and busy + segment_ms[k + 1] > cap_ms:
            return e / total, k, state, True  # the next segment would not fit the budget
    raise AssertionError("unreachable")


class MultiExitExecutor(Executor):
    """One operating point: the stored model's segments with this point's criteria. Same
    interface as the LiteRT executor; ``run`` answers each sample at its own exit and records
    it (``exits``: how many answers each exit gave; ``last_exits``: the last batch's)."""

    def __init__(self, spec: ConfigSpec, blobs: list[bytes], cache: SegmentCache) -> None:
        super().__init__(spec, blobs[0])
        self.blobs, self.cache = blobs, cache
        self.set_criteria(spec.criteria or "null")
        self.exits: Counter = Counter()
        self.last_exits: list[int] = []
        self.sessions: list[Any] = []
        self.seg_ms: list[float] = []
        self.capped = 0  # answers a limiter's cap made earlier than the criteria would

    def set_criteria(self, text: str) -> None:
        """Replace the criteria (Delen's run-time update); the next request uses them.

        Raises:
            InputError: the text is not criteria (the old ones stay).
        """
        fn = parse_criteria(text).compile()
        self.criteria_text, self._should_exit = text, fn

    def load(self) -> "MultiExitExecutor":
        t0 = time.perf_counter()
        with Pinned(self.cores):
            self.sessions, fresh = self.cache.get(self.spec, self.blobs)
            self.seg_ms = self.cache.segment_ms[(self.spec.segments, self.spec.threads)]
            if fresh:  # warm up once per stored model: its other points reuse warm sessions
                for _ in range(3):
                    self._answer(np.zeros((1, *self.spec.input_shape), np.float32))
        self.batch = 1
        self.load_ms = (time.perf_counter() - t0) * 1e3
        return self

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.spec.input_shape

    def _answer(self, x: np.ndarray, cap_ms: float = float("inf")) -> tuple[np.ndarray, int]:
        p, k, _, capped = run_exits(self.sessions, x, self._should_exit,
                                    accuracy=self.spec.exit_accuracy, flops=self.spec.exit_flops,
                                    threads=self.spec.threads, cap_ms=cap_ms,
                                    segment_ms=self.seg_ms, learn=self.seg_ms)
        self.capped += capped
        return p, k

    def run(self, x: np.ndarray | None, slowdown: float = 1.0,
            cap_ms: float = float("inf"), *, every: bool = False) -> tuple[np.ndarray, float]:
        """Answer each sample at its exit; ``cap_ms`` (a limiter's remaining budget for the
        whole batch) makes a sample exit before a segment that would go past it."""
        if not self.sessions:
            raise ExecutorError(f"{self.spec.id}: not loaded")
        xs = (np.zeros((1, *self.spec.input_shape), np.float32) if x is None
              else np.asarray(x, np.float32).reshape(-1, *self.spec.input_shape))
        t0 = time.perf_counter()
        out, exits = [], []
        try:
            for i in range(len(xs)):
                p, k = self._answer(xs[i:i + 1], cap_ms - (time.perf_counter() - t0) * 1e3)
                out.append(p)
                exits.append(k)
        except InputError as e:
            raise ExecutorError(f"{self.spec.id}: {e}") from None
        except Exception as e:  # noqa: BLE001 - onnxruntime's own error types
            raise ValueError(" ".join(str(e).split())[:300]) from None
        dt = time.perf_counter() - t0
        if slowdown > 1.0:
            spin(dt * (slowdown - 1.0))
            dt *= slowdown
        self.last_exits = exits
        self.exits.update(exits)
        self._last = np.stack(out)
        return self._last, dt * 1e3

    def outputs(self, n: int) -> dict[str, np.ndarray]:
        """A multi-exit point answers with one output: its exit's."""
        return {"output": self._last[:n]}

    def close(self) -> None:
        self.sessions = []  # the cache keeps them for the other points of the stored model
