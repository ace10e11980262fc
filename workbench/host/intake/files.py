"""Reading a user's files safely: regular files only, SavedModel folders without links, archives
bounded by what they expand to before anything unpacks them, and paths escaped in messages."""

from __future__ import annotations

import math
import os
import stat
import zipfile
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...names import printable

#: The most a model or data file may expand to once read: an archive's members uncompressed, a
#: ``.npz``'s arrays loaded, a SavedModel's files together. Far above any model profiled for a
#: phone, and it bounds what a crafted file can make us allocate.
MAX_EXPANDED_BYTES = 4 * 10**9
#: The most files an archive or a SavedModel folder may hold.
MAX_MEMBERS = 10_000
#: The most an archive may expand by (uncompressed / compressed), checked once it expands past
#: RATIO_FLOOR: deflate reaches ~1000-fold only on degenerate data such as a zip bomb's zeros.
MAX_RATIO = 200
RATIO_FLOOR = 64 * 10**6
_COPY_BLOCK = 1 << 20


def shown(path: object) -> str:
    """A user's path for a message: control characters escaped."""
    return printable(path)


def _size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _too_big(total: int, limit: int) -> str:
    return f"{_size(total)}, more than the {_size(limit)} limit"


def regular_file(path: Path, what: str) -> os.stat_result:
    """The stat of ``path`` (a symlink the user named is followed), or an InputError: missing,
    unreadable, not a regular file (a folder, FIFO, device or socket: nothing is opened, so
    nothing blocks), or larger than :data:`MAX_EXPANDED_BYTES`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no such {what}", file=shown(path)) from None
    except OSError as e:
        raise InputError(f"cannot read the {what}: {e.strerror or e}", file=shown(path)) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO, device or socket"
        raise InputError(f"is {kind}, not a regular file: refusing to read it as a {what}",
                         file=shown(path))
    if st.st_size > MAX_EXPANDED_BYTES:
        raise InputError(f"the {what} is {_too_big(st.st_size, MAX_EXPANDED_BYTES)}",
                         file=shown(path))
    return st


def _open_regular(path: str | os.PathLike, *, file: object) -> int:
    """A read-only descriptor of a regular file: never through a symlink (O_NOFOLLOW) and never
    blocking on a FIFO (O_NONBLOCK; for a regular file it changes nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if os.path.islink(path):
            raise InputError("is a symlink: refusing to copy what it points at",
                             file=shown(file)) from None
        raise InputError(f"cannot read it: {e.strerror or e}", file=shown(file)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError("is a FIFO, device or socket, not a regular file: refusing to copy it",
                         file=shown(file))
    return fd


def copy_file(src: str | os.PathLike, dst: str | os.PathLike, *,
              budget: int = MAX_EXPANDED_BYTES) -> int:
    """Copy one regular file (see :func:`_open_regular`), at most ``budget`` bytes; returns the
    bytes copied."""
    fd = _open_regular(src, file=src)
    n = 0
    with os.fdopen(fd, "rb") as fh, open(dst, "xb") as out:
        for block in iter(lambda: fh.read(_COPY_BLOCK), b""):
            n += len(block)
            if n > budget:
                raise InputError(f"grew while it was copied: more than the {_size(budget)} "
                                 "limit", file=shown(src))
            out.write(block)
    return n


def _entries(top: Path):
    """(path, lstat) of everything under ``top``, checked: regular files and folders only, none a
    symlink, none resolving outside ``top``, at most :data:`MAX_MEMBERS` of them."""
    base = os.path.realpath(top)
    stack, count = [base], 0
    while stack:
        folder = stack.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError as e:
            raise InputError(f"cannot read the folder: {e.strerror or e}",
                             file=shown(folder)) from None
        for name in names:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            count += 1
            if count > MAX_MEMBERS:
                raise InputError(f"the SavedModel holds more than {MAX_MEMBERS} files",
                                 file=shown(top))
            if stat.S_ISLNK(st.st_mode):
                raise InputError("is a symlink: a SavedModel's files are copied into the "
                                 "registry, and a link would copy what it points at; replace "
                                 "it with the file itself", file=shown(p))
            if os.path.commonpath([base, os.path.realpath(p)]) != base:
                raise InputError("resolves outside the SavedModel folder", file=shown(p))
            if stat.S_ISDIR(st.st_mode):
                stack.append(p)
            elif not stat.S_ISREG(st.st_mode):
                raise InputError("is a FIFO, device or socket, not a regular file: a SavedModel "
                                 "holds files and folders only", file=shown(p))
            yield p, st


def check_tree(top: Path) -> int:
    """Check a SavedModel folder (see :func:`_entries`) and bound its files' total size (the
    ``variables/`` shards' sizes on disk are what loading them reads); returns the total."""
    total = sum(st.st_size for _, st in _entries(top) if stat.S_ISREG(st.st_mode))
    if total > MAX_EXPANDED_BYTES:
        raise InputError(f"its files add up to {_too_big(total, MAX_EXPANDED_BYTES)}",
                         file=shown(top))
    return total


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a SavedModel folder checked as :func:`check_tree` does, each file opened without
    following links, the total bounded."""
    base = os.path.realpath(src)
    os.mkdir(dst)
    budget = MAX_EXPANDED_BYTES
    for p, st in _entries(src):
        target = os.path.join(dst, os.path.relpath(p, base))
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(target)
        else:
            budget -= copy_file(p, target, budget=budget)


def check_archive(path: Path, what: str) -> list[zipfile.ZipInfo] | None:
    """Bound a zip archive (a ``.keras`` file, a ``.npz``) by its members' uncompressed sizes,
    their count and the compression ratio, before anything is extracted; None when it is not a
    zip (the reader then says what is wrong with it)."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if len(infos) > MAX_MEMBERS:
        raise InputError(f"the {what} holds {len(infos)} files, more than the {MAX_MEMBERS} "
                         "limit", file=shown(path))
    total = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if total > MAX_EXPANDED_BYTES:
        raise InputError(f"the {what} expands to {_too_big(total, MAX_EXPANDED_BYTES)}",
                         file=shown(path))
    if total > RATIO_FLOOR and total > MAX_RATIO * max(packed, 1):
        raise InputError(f"the {what} expands {total / max(packed, 1):.0f}-fold "
                         f"({_size(packed)} to {_size(total)}), more than the {MAX_RATIO}-fold "
                         "limit for an archive", file=shown(path))
    return infos


def _check_npz(path: Path) -> None:
    """Bound a ``.npz`` by its arrays' loaded sizes, read from each ``.npy`` header (shape x
    itemsize) before any array is loaded; an array of Python objects (pickled) is refused."""
    infos = check_archive(path, "data file")
    if infos is None:
        with open(path, "rb") as fh:
            if fh.read(6) == b"\x93NUMPY":  # np.load would read one unbounded array
                raise InputError("is a single .npy array, not a .npz archive: save the data with "
                                 "np.savez(path, x=..., y=...)", file=shown(path))
        return  # np.load says what else is wrong with it
    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in infos:
                with zf.open(info) as fh:
                    if fh.read(6) != b"\x93NUMPY":
                        total += info.file_size  # np.load returns such a member's bytes
                        continue
                    read = (np.lib.format.read_array_header_1_0 if fh.read(2) == b"\x01\x00"
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                if dtype.hasobject:
                    raise InputError("holds an array of Python objects (pickled): such data is "
                                     "never loaded; save plain numeric arrays",
                                     file=shown(path), where=shown(info.filename.removesuffix(".npy")))
                total += math.prod(shape) * dtype.itemsize
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"not a readable .npz archive: {first_line(exc)}",
                         file=shown(path)) from None
    if total > MAX_EXPANDED_BYTES:
        raise InputError(f"its arrays take {_too_big(total, MAX_EXPANDED_BYTES)} once loaded",
                         file=shown(path))


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]
