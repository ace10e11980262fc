"""Bundles are confined to their folder and the runtime serves only the bytes it verified:
manifest paths that climb out, symlinks that lead out, names that would write outside the output
folder, an interrupted --force, and model files truncated, rewritten or swapped while running."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import H1_SLO

pytest.importorskip("ai_edge_litert")

from workbench import bundling, fileio  # noqa: E402
from workbench.bundling import make_bundle  # noqa: E402
from workbench.errors import InputError  # noqa: E402
from workbench.host import datasets as ds  # noqa: E402
from workbench.moo.problem import DiscreteProblem  # noqa: E402
from workbench.runtime import BundleError, Event, RuntimeManager, load_bundle  # noqa: E402
from workbench.runtime.bundle import load as rb  # noqa: E402  (where load_bundle reads files)
from workbench.runtime.run import run  # noqa: E402
from workbench.solvers import rass  # noqa: E402

SLO = H1_SLO


@pytest.fixture
def hashed(monkeypatch):
    """Every model path the bundle loader reads and hashes."""
    seen: list[Path] = []
    real = rb.read_verified

    def spy(path, sha256, **kw):
        seen.append(Path(path).resolve())
        return real(path, sha256, **kw)
    monkeypatch.setattr(rb, "read_verified", spy)
    return seen


def _edit(path: Path, change) -> None:
    m = json.loads((path / "manifest.json").read_text())
    change(m)
    (path / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("entry", ["../secret.tflite", "/etc/hostname", "models/../../x"])
def test_a_models_entry_outside_the_bundle_is_refused_even_unused(h1_bundle, hashed, entry):
    path, _ = h1_bundle
    _edit(path, lambda m: m["models"].__setitem__(entry, {"sha256": "0" * 64, "bytes": 1}))
    with pytest.raises(BundleError, match="inside the bundle") as e:
        load_bundle(path)
    assert f"models[{entry!r}]" in str(e.value) and "manifest.json" in str(e.value)
    assert hashed == []  # refused before anything was hashed


def test_a_symlinked_model_file_leading_outside_is_refused_not_served(h1_bundle, hashed,
                                                                        tmp_path):
    path, _ = h1_bundle
    b = load_bundle(path)
    hashed.clear()
    rel = b.configs[b.designs["d0"].configs[0]].file
    outside = tmp_path / "outside.tflite"
    (path / rel).rename(outside)  # same bytes, same checksum: only where it lives is wrong
    (path / rel).symlink_to(outside)
    with pytest.raises(BundleError, match="outside the bundle") as e:
        load_bundle(path)
    assert rel in str(e.value) and outside.resolve() not in hashed


def test_a_symlinked_folder_leading_outside_is_refused(h1_bundle, tmp_path):
    path, _ = h1_bundle
    folder = path / "models" / "h1"
    folder.rename(tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(BundleError, match="outside the bundle"):
        load_bundle(path)


def test_a_symlink_inside_the_bundle_is_fine(h1_bundle):
    path, res = h1_bundle
    b = load_bundle(path)
    rel = b.configs[b.designs["d0"].configs[0]].file
    (path / rel).rename(path / "real.tflite")
    (path / rel).symlink_to(path / "real.tflite")
    assert set(load_bundle(path).usable) == set(res.designs)


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", ".."])
def test_bundle_refuses_names_that_would_write_outside(h1_problem, quick_zoo, tmp_path,
                                                       monkeypatch, name):
    res = rass(h1_problem)
    files = bundling.model_files(quick_zoo[0])
    model = h1_problem.profile.config(res.designs["d0"].configs[0]).model
    renamed = {(t, name if m == model else m, p): f for (t, m, p), f in files.items()}
    prof = h1_problem.profile.model_copy(deep=True)
    for c in prof.configs:
        if c.model == model:
            c.model = name
    problem = DiscreteProblem(prof, SLO, tasks=["h1"])
    monkeypatch.setattr(bundling, "model_files", lambda models=None: renamed)
    out = tmp_path / "out" / "b"
    with pytest.raises(InputError, match="folder of the bundle") as e:
        make_bundle(rass(problem), problem, out)
    assert ".model" in str(e.value) and name in str(e.value)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["out"]
    assert list((tmp_path / "out").iterdir()) == []  # no temporary left either


def test_force_replaces_a_bundle_so_a_kill_never_leaves_none(h1_bundle, h1_problem, quick_zoo,
                                                             monkeypatch):
    """A kill between the old two renames left no bundle; the swap is one step now."""
    path, res = h1_bundle
    before = (path / "manifest.json").read_text()
    real_rename = Path.rename

    def killed_on_the_second_rename(self, target):
        killed_on_the_second_rename.n += 1
        if killed_on_the_second_rename.n == 2:
            raise KeyboardInterrupt
        return real_rename(self, target)
    killed_on_the_second_rename.n = 0
    monkeypatch.setattr(Path, "rename", killed_on_the_second_rename)
    try:
        make_bundle(res, h1_problem, path, models=quick_zoo[0], include="all", overwrite=True)
    except KeyboardInterrupt:
        pass
    monkeypatch.undo()
    assert (path / "manifest.json").is_file()  # the old bundle or the new one, never none
    b = load_bundle(path)
    assert b.manifest["include"] in ("designs", "all")
    assert (path / "manifest.json").read_text() != before  # here: the swap completed
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]


def test_replace_dir_swaps_in_one_step(tmp_path):
    old, new = tmp_path / "b", tmp_path / ".b.new"
    old.mkdir()
    (old / "f").write_text("old")
    new.mkdir()
    (new / "f").write_text("new")
    fileio.replace_dir(new, old)
    assert (old / "f").read_text() == "new" and not new.exists()
    other = tmp_path / "other"
    other.mkdir()
    if not fileio._renameat2_exchange(other, old):
        pytest.skip("this file system cannot exchange two paths (the two-rename fallback runs)")
    # One step swapped both: neither name was ever missing.
    assert (other / "f").read_text() == "new" and not list(old.iterdir())


def _x(quick_zoo, n=4):
    return ds.load("h1", quick=True, root=quick_zoo[1]).x_test[:n]


def test_rewriting_a_model_while_it_runs_does_not_change_the_answers(h1_bundle, quick_zoo):
    path, _ = h1_bundle
    b = load_bundle(path)
    x = _x(quick_zoo)
    with RuntimeManager(b, preload="none") as rm:
        want = np.concatenate([rm.submit("h1", x[i:i + 1]).result(timeout=10) for i in range(4)])
        f = b.path_of(b.designs["d0"].configs[0])
        blob = bytearray(f.read_bytes())
        blob[len(blob) // 2:] = bytes(len(blob) - len(blob) // 2)  # zero the weights' half
        f.write_bytes(bytes(blob))
        got = np.concatenate([rm.submit("h1", x[i:i + 1]).result(timeout=10) for i in range(4)])
    np.testing.assert_array_equal(got, want)


def test_a_model_swapped_after_the_check_is_not_served(h1_bundle, quick_zoo):
    """load_bundle checks every file; the design loads later: the swapped file fails the check
    of the bytes actually read, only its designs go, and the policy falls back."""
    path, res = h1_bundle
    b = load_bundle(path)
    d0_file = b.path_of(b.designs["d0"].configs[0])
    other = next(p for p in quick_zoo[0].rglob("*.tflite") if p.read_bytes() !=
                 d0_file.read_bytes())
    if all(b.path_of(d.configs[0]) == d0_file for d in b.designs.values()):
        pytest.skip("every design uses d0's model file")
    d0_file.write_bytes(other.read_bytes())  # a valid model, just not the verified one
    out = run(b, duration=0.6, rate=100, preload="none",
              events=[Event(0.2, "flag", (res.triggers[0],))])
    faults = out.summary["faults"]
    assert faults and "checksum mismatch" in faults[0]["reason"] and "d0" in faults[0]["removed"]
    assert out.lost == 0 and out.stats["served"] > 0


def test_truncating_a_loaded_model_does_not_kill_the_runtime(h1_bundle, quick_zoo, tmp_path):
    """LiteRT maps a model it opens by path: truncating the file under it is a SIGBUS (exit
    135, all in flight lost). The runtime serves from its verified in-memory copy."""
    path, _ = h1_bundle
    np.save(tmp_path / "x.npy", _x(quick_zoo))
    script = textwrap.dedent(f"""
        import pathlib
        import numpy as np
        from workbench.runtime import RuntimeManager, load_bundle
        b = load_bundle({str(path)!r})
        x = np.load({str(tmp_path / 'x.npy')!r})
        with RuntimeManager(b, preload="none") as rm:
            a = rm.submit("h1", x[:1]).result(timeout=10)
            for f in pathlib.Path({str(path)!r}).rglob("*.tflite"):
                open(f, "wb").close()  # truncate in place (the mapping, if any, stays)
            c = [rm.submit("h1", x[i:i + 1]).result(timeout=10) for i in range(4)]
        assert np.array_equal(c[0], a)
        print("served", len(c))
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "served 4" in p.stdout


def test_a_request_of_several_samples_gets_an_answer_for_each(h1_bundle, quick_zoo):
    # The design runs batches of one: a request of 3 samples once got 1 answer, silently.
    path, _ = h1_bundle
    x = _x(quick_zoo, 3)
    with RuntimeManager(load_bundle(path), preload="none") as rm:
        each = np.concatenate([rm.submit("h1", x[i:i + 1]).result(timeout=10) for i in range(3)])
        together = rm.submit("h1", x).result(timeout=10)
        every = rm.submit("h1", x, every_output=True).result(timeout=10)
    assert len(together) == 3
    np.testing.assert_array_equal(together, each)
    # Every output of a single-output model: its answer, by name.
    assert len(every) == 1
    np.testing.assert_array_equal(next(iter(every.values())), each)


@pytest.mark.parametrize("bad, where", [
    ([3], "outputs[0]"), ([], "outputs"), ([{"index": -1, "key": None, "name": "a"}],
                                          "outputs[0].index")])
def test_a_malformed_outputs_entry_is_refused_naming_it(h1_bundle, bad, where):
    path, _ = h1_bundle
    _edit(path, lambda m: next(iter(m["configs"].values())).__setitem__("outputs", bad))
    with pytest.raises(BundleError) as e:
        load_bundle(path)
    assert f".{where}" in str(e.value) and "manifest.json" in str(e.value)
