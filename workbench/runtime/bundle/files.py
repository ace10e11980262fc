"""A bundle's model files: where they may be (inside the bundle, symlinks resolved), and how
the runtime reads them (once, size-limited, checked against the manifest's sha256). Standard
library only."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ...errors import WorkbenchError
from .specs import MAX_MODEL_BYTES, BundleError


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ModelFault(WorkbenchError, RuntimeError):
    """A model file that cannot be served: missing, not a regular file, or not the bytes the
    manifest's sha256 names. ``reason`` is that without the file name."""

    def __init__(self, path: Path, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{path.name}: {reason}")


def inside(root: Path, rel: str, *, file: Path, where: str) -> None:
    """Check that ``root / rel`` stays inside the bundle, else a BundleError naming the field.

    Refused: absolute paths, ``..`` parts, and any path whose real location (symlinks of the
    file or of a folder on the way resolved) is outside ``root``. Nothing is opened or hashed."""
    rp = Path(rel)
    if not rel or rp.is_absolute() or ".." in rp.parts or "\0" in rel:
        raise BundleError("model paths must stay inside the bundle", file=file, where=where,
                          value=rel)
    base = root.resolve()
    target = (root / rp).resolve()
    if target != base and base not in target.parents:
        raise BundleError("model path resolves outside the bundle (a symlink?)", file=file,
                          where=where, value=rel)


def read_verified(path: Path, sha256: str, *, limit: int = MAX_MODEL_BYTES) -> bytes:
    """A model file's bytes, read once and checked against ``sha256``: the runtime runs from this
    buffer, so a file truncated, rewritten or swapped later cannot change what is served (LiteRT
    maps a file it opens by path: a truncated mapped file is a SIGBUS)."""
    if not path.exists():
        raise ModelFault(path, "missing")
    if not path.is_file():
        raise ModelFault(path, "not a regular file")
    try:
        # O_NONBLOCK: a FIFO swapped in after the check must not hang the runtime.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ModelFault(path, "not a regular file")
            if st.st_size > limit:
                raise ModelFault(path, f"larger than {limit} bytes")
            blob = fh.read(limit + 1)
    except OSError as e:
        raise ModelFault(path, f"unreadable ({e.strerror or e})") from None
    if len(blob) > limit:
        raise ModelFault(path, f"larger than {limit} bytes")
    if hashlib.sha256(blob).hexdigest() != sha256:
        raise ModelFault(path, "checksum mismatch")
    return blob

