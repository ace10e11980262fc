"""Real memory pressure (issue 16): the kernel enforces the limit, swap turns a kill into paging,
and every group, swap file and process the harness makes is gone afterwards, also on failure and
after the harness itself is killed."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.memory import pressure as P

HAVE = P.support()
needs_cgroup = pytest.mark.skipif(HAVE.cgroup is None, reason=f"no memory cgroup: {HAVE.why_not}")
needs_swap = pytest.mark.skipif(not HAVE.swap, reason="swap files need root and mkswap/swapon")

# 200 MiB touched, under a 100 MiB limit.
ALLOC = [sys.executable, "-c", "import numpy as np; a = np.ones(200 * 2**20 // 8); print(a.sum())"]


def _ours() -> list[str]:
    return sorted(e for e in os.listdir(HAVE.root) if e.startswith(P.PREFIX)) if HAVE.root else []


@needs_cgroup
def test_the_kernel_kills_a_process_over_its_limit_without_swap():
    r = P.run_limited(ALLOC, limit_bytes=100 << 20, swap_bytes=0)
    assert r.returncode == -signal.SIGKILL and r.oom_killed >= 1
    assert r.peak_bytes is not None and r.peak_bytes <= 100 << 20
    ok = P.run_limited(ALLOC, limit_bytes=400 << 20)
    assert ok.returncode == 0 and ok.oom_killed == 0 and ok.peak_bytes > 200 << 20
    assert not _ours()


@needs_cgroup
@needs_swap
def test_with_a_swap_file_the_same_process_pages_instead(tmp_path):
    with P.swap_file(256 << 20) as swap:
        assert str(swap) in Path("/proc/swaps").read_text()
        r = P.run_limited(ALLOC, limit_bytes=100 << 20, swap_bytes=None)
        assert r.returncode == 0 and r.oom_killed == 0, r.stderr
        assert r.swapped_out_pages > 0 and r.major_faults > 0
        capped = P.run_limited(ALLOC, limit_bytes=100 << 20, swap_bytes=0)
        assert capped.returncode == -signal.SIGKILL  # swap_bytes=0: this group may not swap
    assert str(swap) not in Path("/proc/swaps").read_text() and not swap.exists()


@needs_cgroup
def test_the_group_and_its_processes_go_when_the_block_fails():
    with pytest.raises(RuntimeError, match="experiment failed"):
        with P.memory_group(64 << 20) as g:
            child = subprocess.Popen(["sleep", "300"], preexec_fn=g.preexec)
            assert g.pids() == [child.pid]
            path = g.path
            raise RuntimeError("experiment failed")
    assert child.wait(timeout=10) == -signal.SIGKILL
    assert not path.exists() and not _ours()


@needs_cgroup
def test_what_a_killed_harness_left_is_removed_by_the_next_one(tmp_path):
    script = (
        "import subprocess, sys, time\n"
        "from workbench.memory import pressure as P\n"
        "with P.memory_group(64 << 20) as g:\n"
        "    c = subprocess.Popen(['sleep', '300'], preexec_fn=g.preexec)\n"
        "    print(g.path, c.pid, flush=True)\n"
        "    time.sleep(300)\n")
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    path, sleeper = harness.stdout.readline().split()
    harness.kill()  # SIGKILL: no finally runs
    harness.wait()
    harness.stdout.close()
    assert Path(path).exists() and int(sleeper) in [
        int(p) for p in (Path(path) / "cgroup.procs").read_text().split()]
    with P.memory_group(64 << 20):
        assert not Path(path).exists()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{sleeper}") and time.monotonic() < deadline:
        time.sleep(0.05)  # reaped by init once killed
    assert not os.path.exists(f"/proc/{sleeper}") or \
        "zombie" in Path(f"/proc/{sleeper}/status").read_text()
    assert not _ours()


@needs_swap
def test_a_swap_file_is_turned_off_and_deleted_when_the_block_fails(tmp_path):
    with pytest.raises(KeyError):
        with P.swap_file(16 << 20, folder=tmp_path) as swap:
            assert str(swap) in Path("/proc/swaps").read_text()
            raise KeyError("boom")
    assert str(swap) not in Path("/proc/swaps").read_text()
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(shutil.which("fincore") is None, reason="util-linux fincore absent")
def test_dropping_the_page_cache_makes_the_next_read_cold(tmp_path):
    f = tmp_path / "weights.bin"
    f.write_bytes(os.urandom(8 << 20))
    f.read_bytes()

    def cached_pages():
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(f)],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    assert cached_pages() > 0
    how = P.drop_page_cache([f])
    assert how in ("drop_caches", "fadvise")
    assert cached_pages() == 0


def test_without_a_memory_cgroup_it_says_why_and_runs_nothing(monkeypatch):
    monkeypatch.setattr(P, "support", lambda: P.Support(None, None, False, False,
                                                        "memory cgroups need root"))
    with pytest.raises(P.PressureUnavailable, match="memory cgroups need root"):
        P.run_limited(["true"], limit_bytes=64 << 20)
    with pytest.raises(P.PressureUnavailable, match="swap"):
        with P.swap_file(1 << 20):
            pass
