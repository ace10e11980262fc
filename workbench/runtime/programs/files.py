"""A program's weight files as its runners read them: sizes checked against the program when
opened, read into a given buffer (``preadv``), a bounded number kept open. Standard library."""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import InputError
from .program import Program


def _read_into(fd: int, mv: memoryview, nbytes: int, path: Path) -> None:
    got = os.preadv(fd, [mv[:nbytes]], 0)
    if got != nbytes:
        raise InputError(f"short read: {got} of {nbytes} bytes", file=path)


class _Files:
    """The program's weight files. Up to :attr:`KEEP_OPEN` stay open for the runner's life (one
    descriptor each); a program with more slices (a wide layer under a small budget can have
    thousands) opens each file for its read, so the process's descriptor limit is never what
    a budget runs into."""

    KEEP_OPEN = 256

    def __init__(self, prog: Program, root: Path) -> None:
        self.root = root
        self.fds: dict[str, int] = {}
        keep = len(prog.files) <= self.KEEP_OPEN
        try:
            for f in prog.files:
                if keep:
                    self.fds[f] = os.open(root / f, os.O_RDONLY)
                    size = os.fstat(self.fds[f]).st_size
                else:
                    size = os.stat(root / f).st_size
                want = next(prog.file_bytes(s) for s in prog.steps if s.file == f)
                if size != want:
                    raise InputError(f"weight file has {size} bytes, the program needs {want}",
                                     file=root / f)
        except BaseException:
            self.close()
            raise

    def read(self, f: str, mv: memoryview, nbytes: int) -> None:
        fd = self.fds.get(f)
        if fd is not None:
            _read_into(fd, mv, nbytes, self.root / f)
            return
        fd = os.open(self.root / f, os.O_RDONLY)
        try:
            _read_into(fd, mv, nbytes, self.root / f)
        finally:
            os.close(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}

