"""Every text input a user gives (profiles, CSV tables, `solve --table`, benchmark_model logs,
accuracy tables, bundle manifests) answers a wrong file with one line naming it: bytes that are
not UTF-8, UTF-16, a folder, a device that never ends, JSON nested too deeply, a CSV cell over
the csv module's limit. Reads are bounded."""

import csv
import os

import pytest

from workbench.cli import main
from workbench.errors import InputError
from workbench.fileio import read_text
from workbench.profiles import load_profile
from workbench.profiles.importers import accuracy_table, import_benchmark_log, import_csv
from workbench.runtime import load_bundle

HEADER = "config,model,precision,processor,L,A\n"


def _load_manifest(path):
    """A bundle folder around a manifest file: what load_bundle reads."""
    folder = path.parent / "bundle"
    folder.mkdir(exist_ok=True)
    target = folder / "manifest.json"
    if path.is_dir():
        target.mkdir()
    elif path.is_symlink() or not path.is_file():
        target.symlink_to(path)
    else:
        target.write_bytes(path.read_bytes())
    return load_bundle(folder)


SURFACES = {
    "profile": lambda p: load_profile(p),
    "csv": lambda p: import_csv(p),
    "log": lambda p: import_benchmark_log(p, model="m", precision="FP32"),
    "accuracy": lambda p: accuracy_table([str(p)]),
    "manifest": _load_manifest,
}


def _named(surface, p):
    """The file name an error must name (a manifest is read as the bundle's manifest.json)."""
    return "manifest.json" if surface == "manifest" else p.name


def _write(tmp_path, body: bytes, suffix):
    p = tmp_path / f"in{suffix}"
    p.write_bytes(body)
    return p


BAD = {
    "latin-1": ("not UTF-8", lambda s: ("caf\xe9," + s).encode("latin-1")),
    "utf-16": ("UTF-16", lambda s: s.encode("utf-16")),
}


@pytest.mark.parametrize("surface", sorted(SURFACES))
@pytest.mark.parametrize("bad", sorted(BAD))
def test_text_that_is_not_utf8_is_one_clear_error(tmp_path, surface, bad):
    msg, encode = BAD[bad]
    suffix = ".csv" if surface in ("csv", "accuracy") else ".json"
    p = _write(tmp_path, encode('{"a": 1}' if suffix == ".json" else HEADER), suffix)
    with pytest.raises(InputError, match=msg) as e:
        SURFACES[surface](p)
    assert _named(surface, p) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_a_folder_is_not_a_file(tmp_path, surface):
    d = tmp_path / ("t.csv" if surface in ("csv", "accuracy") else "t.json")
    d.mkdir()
    with pytest.raises(InputError, match="folder") as e:
        SURFACES[surface](d)
    assert "t." in str(e.value)


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_an_endless_device_is_refused_without_reading_it(tmp_path, surface):
    """/dev/zero (here behind a name the surface expects) used to be read until memory ran
    out."""
    p = tmp_path / ("zero.csv" if surface in ("csv", "accuracy") else "zero.json")
    p.symlink_to("/dev/zero")
    with pytest.raises(InputError, match="not a regular file") as e:
        SURFACES[surface](p)
    assert _named(surface, p) in str(e.value)


def test_reads_are_bounded(tmp_path):
    p = tmp_path / "big.json"
    p.write_bytes(b" " * 2048)
    with pytest.raises(InputError, match="too large"):
        read_text(p, what="profile", limit=1024)
    assert read_text(p, limit=4096) == " " * 2048


@pytest.mark.parametrize("surface", ["profile", "manifest"])
def test_json_nested_too_deeply_is_an_error_not_a_recursion_error(tmp_path, surface):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply") as e:
        SURFACES[surface](p)
    assert _named(surface, p) in str(e.value)


@pytest.mark.parametrize("surface", ["csv", "accuracy"])
def test_a_csv_cell_over_the_csv_limit_names_the_file(tmp_path, surface):
    p = tmp_path / "huge.csv"
    p.write_text(HEADER + "a,b,FP32,CPU,1," + "9" * (csv.field_size_limit() + 10) + "\n")
    with pytest.raises(InputError, match="not a readable CSV") as e:
        SURFACES[surface](p)
    assert "huge.csv" in str(e.value)


def test_a_utf8_bom_is_fine(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes("\ufeff".encode() + (HEADER + "c1,m,FP32,CPU,5,70\n").encode())
    assert import_csv(p).configs[0].L == 5


def test_solve_table_gives_one_line_not_a_traceback(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_bytes(HEADER.encode("utf-16"))
    assert main(["solve", "--table", str(p), "--slo", "min L"]) == 1
    err = capsys.readouterr().err
    assert "t.csv" in err and "UTF-16" in err and len(err.strip().splitlines()) == 1
    assert main(["solve", "--table", str(tmp_path), "--slo", "min L"]) == 1
    assert "folder" in capsys.readouterr().err


def test_profiles_import_gives_one_line_for_a_binary_log(tmp_path, capsys):
    p = tmp_path / "run.log"
    p.write_bytes(b"\x00\xff\xfe garbage \x80")
    out = tmp_path / "p.json"
    assert main(["profiles", "import", str(p), "--format", "benchmark-log", "--model", "m",
                 "--precision", "FP32", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "run.log" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # nothing written


def test_what_a_killed_writer_left_is_swept_by_the_next_one(tmp_path):
    """SIGKILL between creating a staging file or folder and renaming it leaves it behind (the
    attack found `.bundle.*` folders after `bundle --force` was killed); the next writer of the
    same path removes it once its process is gone, and never a live writer's."""
    import subprocess
    import sys

    from workbench.fileio import atomic_write_text, staging

    target = tmp_path / "profile.json"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (tmp_path / f".profile.json.{gone}.abc_1234.tmp").write_text("half")  # tempfile's form
    (tmp_path / f".profile.json.{gone}.dir_5678").mkdir()
    live = tmp_path / f".profile.json.{os.getpid()}.live.tmp"
    live.write_text("being written")
    other = tmp_path / f".other.json.{gone}.x.tmp"
    other.write_text("not ours")
    atomic_write_text(target, "{}\n")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([target.name, live.name, other.name])
    folder = staging(tmp_path / "bundle", folder=True)
    assert folder.is_dir() and folder.name.startswith(f".bundle.{os.getpid()}.")


def test_a_writer_cleans_only_its_own_paths_leftovers(tmp_path):
    """Staging leftovers are matched by the whole name: the writer of `a` must not take a file
    of path `a.5.old` (or anything else starting `.a.5.`) for a dead process 5's leftovers."""
    from workbench.fileio import atomic_write_text

    neighbour = tmp_path / ".a.5.old"
    neighbour.write_text("someone else's\n")
    lock = tmp_path / ".a.99999999.lock"
    lock.write_text("")
    dead = tmp_path / ".a.99999999.abcd1234.tmp"  # a killed writer of `a` (pid not alive)
    dead.write_text("half")
    atomic_write_text(tmp_path / "a", "new\n")
    assert neighbour.exists() and lock.exists() and not dead.exists()
    assert (tmp_path / "a").read_text() == "new\n"
