"""The simulator's model of the kernel paging a process that holds more than its memory allows
(modelled; its parameters are fitted to runs under a real memory limit, see
``workbench.lab.experiments.masa.paging.fit_paging``).

Why a residency model and not a penalty per overcommitted task: under a real limit the kernel
pages out what has not been touched for longest (weights loaded for a layer that waits, the
page cache of files already read) and pages it back in only when a task touches it. Memory that
is over the budget but idle costs one page-out, not a charge on every task that starts while it
is held. Charging each task ``2 x min(overcommit, working set)`` overestimated MASA, whose
locked-but-waiting loads are exactly such idle memory, by 3-10x against measured runs.

The model: memory holds anonymous bytes (arrays the scheduler accounts for) and page cache (the
file pages a load reads through, ``cache_factor`` x its weights; clean, so dropped for free).
When what is resident passes ``capacity`` the least recently used bytes go: ``anon_share`` of
what is reclaimed comes from anonymous memory while page cache remains (the kernel balances the
two lists; swappiness), the rest from the cache. A task first makes its working set resident
(paging in what was paged out) and allocates what it creates; the bytes paged out and in,
over ``swap_bps``, are its penalty.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable


class Residency:
    """Which held bytes are in memory, least recently used first."""

    def __init__(self, capacity: int, *, anon_share: float = 1.0):
        self.capacity = int(capacity)
        self.anon_share = float(anon_share)
        self.anon: OrderedDict[Hashable, int] = OrderedDict()  # resident anonymous bytes
        self.swapped: dict[Hashable, int] = {}  # paged-out anonymous bytes
        self.cache: OrderedDict[Hashable, int] = OrderedDict()  # page cache of files read
        self.anon_bytes = 0
        self.cache_bytes = 0
        self.paged_in = self.paged_out = 0  # totals, bytes

    def use(self, ops: Iterable[tuple[str, Hashable, int]]) -> tuple[int, int]:
        """Bytes paged in and out to run one task. ``ops`` in the order the task does them:
        ``("touch", key, 0)`` reads held memory, ``("new", key, n)`` allocates ``n`` bytes,
        ``("file", key, n)`` reads a file through ``n`` bytes of page cache."""
        paged_in = paged_out = 0
        used: list[Hashable] = []
        for op, key, n in ops:
            if op == "touch":
                back = self.swapped.pop(key, 0)
                if back:
                    paged_in += back
                    self._add(key, back)
                elif key in self.anon:
                    self.anon.move_to_end(key)
                used.append(key)
            elif op == "new":
                self._add(key, n)
                used.append(key)
            elif key in self.cache:  # file already cached: a copy, no new charge
                self.cache.move_to_end(key)
            elif n > 0:
                self.cache[key] = n
                self.cache_bytes += n
            paged_out += self._reclaim()
        # A working set larger than memory: what the task's own later steps pushed out comes
        # back while it computes.
        paged_in += sum(self.swapped.get(k, 0) for k in dict.fromkeys(used))
        self.paged_in += paged_in
        self.paged_out += paged_out
        return paged_in, paged_out

    def free(self, key: Hashable) -> None:
        self.anon_bytes -= self.anon.pop(key, 0)
        self.swapped.pop(key, None)

    def _add(self, key: Hashable, n: int) -> None:
        if n:
            self.anon[key] = self.anon.get(key, 0) + n
            self.anon.move_to_end(key)
            self.anon_bytes += n

    def _reclaim(self) -> int:
        """Bring what is resident back to the capacity; returns anonymous bytes paged out."""
        excess = self.anon_bytes + self.cache_bytes - self.capacity
        if excess <= 0:
            return 0
        from_cache = min(self.cache_bytes,
                         max((1 - self.anon_share) * excess, excess - self.anon_bytes))
        self.cache_bytes -= self._evict(self.cache, int(from_cache), None)
        out = self._evict(self.anon, excess - int(from_cache), self.swapped)
        self.anon_bytes -= out
        return out

    @staticmethod
    def _evict(lru: OrderedDict, n: int, to: dict | None) -> int:
        done = 0
        while done < n and lru:
            key, have = next(iter(lru.items()))
            take = min(have, n - done)
            if take == have:
                del lru[key]
            else:
                lru[key] = have - take
            if to is not None:
                to[key] = to.get(key, 0) + take
            done += take
        return done
