"""The Runtime Manager's serving: requests queued per task (:meth:`Serving.submit`), and one
thread per task that batches them up to its configuration's batch size, waits on its limiter,
runs the batch pinned to the active design's cores (retried once on the design the policy falls
back to), and answers every request or rejects it with the reason."""

from __future__ import annotations

import os
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import WorkbenchError
from ..executor import Executor, ExecutorError
from ..limiter import TokenBucket
from ..multiexit import MultiExitExecutor
from .state import ManagerState


class Rejected(WorkbenchError):
    """A request the runtime explicitly did not serve (the message says why)."""


@dataclass
class _Req:
    x: np.ndarray | None
    t: float
    future: Future
    every: bool = False  # answer with every output of the model, by name


class Serving(ManagerState):
    """Requests in, answers out, as a part of the Runtime Manager."""

    def submit(self, task: str, x: np.ndarray | None = None, *,
               every_output: bool = False) -> Future:
        """Queue one request for ``task`` (``x``: one or more samples; None = zeros). The future
        resolves to the float32 output the task's metric reads (the bundle's ``output``), or
        with ``every_output`` to a dict of every output of the model by name (signature keys
        such as ``output_0``, or the ONNX graph's output names), or raises :class:`Rejected`."""
        fut: Future = Future()
        with self._lock:
            self.stats["submitted"] += 1
            if task in self._window:
                self._window[task]["arrived"] += 1
        r = _Req(x, time.perf_counter(), fut, every_output)
        if not isinstance(task, str) or task not in self._queues:
            self._reject(r, f"unknown task {task!r}; the bundle has {', '.join(self.tasks)}")
        elif x is not None and np.size(x) == 0:
            self._reject(r, "bad input: no samples")
        elif not self._accepting:
            self._reject(r, "runtime not running")
        elif self._queues[task].qsize() >= self.options.max_queue:
            self._reject(r, "queue full")
        else:
            self._queues[task].put(r)
        return fut

    def _reject(self, r: _Req, reason: str) -> None:
        with self._lock:
            self.stats["rejected"] += 1
            rr = self.stats["rejected_reasons"]
            rr[reason] = rr.get(reason, 0) + 1
        r.future.set_exception(Rejected(reason))

    def _serve(self, task: str) -> None:
        """The serving thread of ``task``: batch, admit, run, answer, until stopped."""
        q = self._queues[task]
        pinned: frozenset | None = None
        while True:
            try:
                first = q.get(timeout=0.05)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            ex = self._active.get(task)
            batch = self._gather(q, first, ex.batch if ex else 1)
            cap_ms = float("inf")
            bucket = self._buckets.get(task)
            if bucket is not None and ex is not None:
                admitted = self._admit(task, bucket, ex, batch)
                if admitted is None:
                    continue  # dropped, or the runtime is stopping
                cap_ms = admitted
            started = self.now()
            for _attempt in range(2):
                ex = self._active.get(task)
                if ex is None:
                    for r in batch:
                        self._reject(r, "no usable design")
                    break
                pinned = self._pin(ex, pinned)
                try:
                    y, ms, every = self._run_batch(task, ex, batch, cap_ms)
                except ExecutorError as e:
                    self._fail_config(ex.spec.id, str(e))
                    continue  # the policy fell back: retry the batch once on the new design
                except (ValueError, RuntimeError) as e:
                    for r in batch:
                        self._reject(r, f"bad input: {' '.join(str(e).split())[:200]}")
                    break
                self._answer(task, ex, batch, y, ms, every, bucket, started)
                break
            else:
                for r in batch:
                    self._reject(r, "design failed twice")

    def _gather(self, q: queue.Queue, first: _Req, cap: int) -> list[_Req]:
        """A batch: ``first`` and what else arrives within ``batch_wait``, up to ``cap``."""
        batch = [first]
        deadline = time.perf_counter() + self.batch_wait
        while len(batch) < cap:
            try:
                batch.append(q.get(timeout=max(0.0, deadline - time.perf_counter())))
            except queue.Empty:
                break
        return batch

    def _pin(self, ex: Executor, pinned: frozenset | None) -> frozenset:
        """Pin this thread to the design's cores (when they changed); returns them."""
        if ex.cores != pinned:
            os.sched_setaffinity(0, ex.cores)
            # What runs on an engine is the thread pinned to its cores: a throttle of that
            # engine confines this thread from now on, and releases it when it pins itself
            # elsewhere.
            self.injector.serving_on(threading.get_native_id(), ex.cores, ex.spec.processor)
        return ex.cores

    def _run_batch(self, task: str, ex: Executor, batch: list[_Req], cap_ms: float
                   ) -> tuple[Any, float, bool]:
        """Run a batch on ``ex`` (a multi-exit design within ``cap_ms``): its outputs, the
        invoke time (ms) and whether any request wants every output."""
        xs = [r.x for r in batch]
        x = None if all(v is None for v in xs) else np.concatenate(
            [np.zeros((1, *ex.input_shape), np.float32) if v is None else
             np.asarray(v, np.float32).reshape(-1, *ex.input_shape) for v in xs])
        every = any(r.every for r in batch)
        if isinstance(ex, MultiExitExecutor):
            capped = ex.capped
            y, ms = ex.run(x, slowdown=self.injector.slowdown(ex.cores), cap_ms=cap_ms)
            if ex.capped > capped:
                with self._lock:
                    self.stats["limited"]["capped"] += ex.capped - capped
                self._held(task)
        else:
            y, ms = ex.run(x, slowdown=self.injector.slowdown(ex.cores), every=every)
        return y, ms, every

    def _answer(self, task: str, ex: Executor, batch: list[_Req], y: Any, ms: float,
                every: bool, bucket: TokenBucket | None, started: float) -> None:
        """Charge the limiter, count the batch (and a multi-exit design's exits), and answer
        each request with its rows of the outputs."""
        self._samples[task].append(ms)
        if bucket is not None:
            with self._bucket_lock:
                bucket.charge(ms / 1e3, started)
            with self._lock:
                self._window[task]["busy"] += ms / 1e3
        if isinstance(ex, MultiExitExecutor):
            with self._lock:
                got = self.stats["exits"].setdefault(task, {})
                for k in ex.last_exits:
                    got[k + 1] = got.get(k + 1, 0) + 1
        cur = self.current
        self.served_log.append((self.now(), task, ms, cur.name if cur else None, len(batch)))
        outs = ex.outputs(len(y)) if every else {}
        k = 0
        for r in batch:
            n = 1 if r.x is None else len(np.asarray(r.x).reshape(-1, *ex.input_shape))
            r.future.set_result({name: v[k:k + n] for name, v in outs.items()}
                                if r.every else y[k:k + n])
            k += n
        with self._lock:
            self.stats["served"] += len(batch)
        if self.options.request_slo_ms is not None:
            done, since = time.perf_counter(), self._active_since
            self._requests[task].extend((done - r.t) * 1e3 for r in batch if r.t >= since)
