"""The Runtime Manager's designs: loading a configuration's executor (LiteRT model, layer
program or multi-exit segments, each from the bytes the bundle verified), deciding with the
policy and switching, taking a faulty configuration's designs out of service, preloading what
the policy would pick next (and, under memory pressure, releasing the rest), and replacing a
multi-exit design's criteria while serving."""

from __future__ import annotations

import queue
import time

from ...errors import InputError
from ..bundle import ModelFault
from ..criteria import parse_criteria
from ..executor import Executor, ExecutorError, ProgramExecutor
from ..multiexit import MultiExitExecutor
from ..policy import DeviceState
from .state import ManagerState


class Designs(ManagerState):
    """Designs loaded, chosen and switched, as a part of the Runtime Manager."""

    def _usable(self) -> set[str]:
        return set(self.bundle.usable)

    def _load(self, cid: str) -> Executor:
        try:
            blob = self.bundle.model_bytes(cid)
        except ModelFault as e:
            raise ExecutorError(f"{cid}: {e}") from None
        spec = self.bundle.configs[cid]
        if spec.memory_mode:
            return ProgramExecutor(spec, blob, self.bundle.weights_dir(cid)).load()
        if spec.criteria is not None:
            try:
                blobs = [self.bundle.file_bytes(f) for f in spec.segments]
            except ModelFault as e:
                raise ExecutorError(f"{cid}: {e}") from None
            me = MultiExitExecutor(spec, blobs, self._segments)
            if spec.task in self._criteria:
                me.set_criteria(self._criteria[spec.task])
            return me.load()
        return Executor(spec, blob).load()

    def set_criteria(self, task: str, text: str) -> None:
        """Replace the exit criteria of ``task``'s multi-exit designs while serving (Delen's
        run-time updates): the next request uses them, and so does any point loaded later.

        Raises:
            InputError: an unknown task or text that is not criteria (nothing changes).
        """
        if task not in self.tasks:
            raise InputError("no such task in the bundle", where="task", value=task)
        parse_criteria(text)
        with self._lock:
            self._criteria[task] = text
            for ex in list(self._loaded.values()):
                if isinstance(ex, MultiExitExecutor) and ex.spec.task == task:
                    ex.set_criteria(text)
        self.timeline.events.append({"t": self.now(), "kind": "criteria", "task": task,
                                     "criteria": text})

    def _executor(self, cid: str) -> Executor:
        ex = self._loaded.get(cid)
        if ex is None:
            ex = self._loaded[cid] = self._load(cid)
        return ex

    def _remove_config(self, cid: str, reason: str) -> None:
        """Take a configuration's designs out of service and record the fault."""
        with self._lock:
            roles = self.bundle.remove_config(cid, reason)
            self._loaded.pop(cid, None)
            self.timeline.events.append({"t": self.now(), "kind": "fault", "config": cid,
                                         "removed": roles, "reason": reason})

    def _fail_config(self, cid: str, reason: str) -> None:
        self._remove_config(cid, reason)
        self._decide_and_switch(reason=f"fault: {cid}", force=True)

    def _decide_and_switch(self, *, reason: str, force: bool = False) -> None:
        with self._switch_lock:
            self._decide_and_switch_locked(reason, force)

    def _decide_and_switch_locked(self, reason: str, force: bool) -> None:
        while True:
            t0 = time.perf_counter()
            choice = self.policy.decide(self.state, self._usable())
            self.decision_us.append((time.perf_counter() - t0) * 1e6)
            if choice is None:
                if self.current is not None or force:
                    self._active = {t: None for t in self.tasks}
                    self.current = None
                return
            if self.current is not None and choice == self.current and not force:
                return
            t1 = time.perf_counter()
            try:
                cold = [c for c in choice.configs if c not in self._loaded]
                execs = [self._executor(c) for c in choice.configs]
            except ExecutorError as e:
                self._remove_config(next(c for c in choice.configs if c not in self._loaded),
                                    str(e))
                continue  # decide again without the broken design
            # The switch itself: serving threads read _active on their next batch.
            self._active = dict(zip(self.tasks, execs))
            self._active_since = time.perf_counter()
            switch_ms = (time.perf_counter() - t1) * 1e3
            prev, self.current = self.current, choice
            self.timeline.switches.append({
                "t": self.now(), "from": prev.name if prev else None, "to": choice.name,
                "configs": list(choice.configs),
                "reason": reason, "flags": list(self.state.flagged) + (
                    ["memory"] if self.state.memory else []),
                "decision_us": self.decision_us[-1], "switch_ms": switch_ms, "cold": cold})
            return

    def _schedule_preload(self) -> None:
        if self.options.preload == "none":
            return
        usable = self._usable()
        if self.options.preload == "all":
            want = [self.bundle.designs[r].configs for r in self.bundle.fallback if r in usable]
        else:
            want = [c.configs for c in (self.policy.decide(s, usable) for s in self._next_states())
                    if c is not None]
        keep = set(self.current.configs if self.current else ())
        for cfgs in want:
            keep |= set(cfgs)
            for c in cfgs:
                if c not in self._loaded:
                    self._load_q.put(c)
        if self.state.memory:  # under memory pressure hold only what the policy may need next
            for c in [c for c in self._loaded if c not in keep]:
                self._loaded.pop(c).close()
            self.bundle.release(keep)

    def _next_states(self) -> list[DeviceState]:
        """The states one more loaded core, or a memory issue, would lead to: what to preload.
        Per core, not per processor name, because core sets overlap (core 0 loaded flags both
        CPU[0] and CPU[0,1])."""
        out = []
        for c in self.cores:
            procs = {p: v or c in self.device.proc_cores[p]
                     for p, v in self.state.processors.items()}
            if procs != self.state.processors:
                out.append(DeviceState(procs, self.state.memory))
        if not self.state.memory:
            out.append(DeviceState(dict(self.state.processors), True))
        return out

    def _loader(self) -> None:
        while not self._stop.is_set():
            try:
                cid = self._load_q.get(timeout=0.05)
            except queue.Empty:
                continue
            if cid in self._loaded or cid not in self.bundle.configs:
                continue
            try:
                ex = self._load(cid)
            except ExecutorError as e:
                self._remove_config(cid, str(e))
                continue
            self._loaded.setdefault(cid, ex)

