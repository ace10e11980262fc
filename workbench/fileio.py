"""Files in and out: atomic writes (a reader never sees a half-written profile, report or
bundle), and bounded, strictly decoded reads of the text files users give (one clear error for a
folder, a device, a huge file, UTF-16 or bytes that are not UTF-8, JSON nested too deeply)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from .errors import InputError
from .procfs import alive

#: The largest text input read (CSV tables, logs, manifests; profiles have their own bound in
#: workbench.profiles.store): 256 MB is far above any real one, and bounds what a mistaken path
#: (a disk image, /dev/zero) can make us read.
MAX_TEXT_BYTES = 256 << 20

_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def read_text(path: str | os.PathLike, *, what: str = "file",
              limit: int = MAX_TEXT_BYTES) -> str:
    """A user's text file, read whole: UTF-8 (a UTF-8 byte-order mark is dropped), at most
    ``limit`` bytes, a regular file. Anything else is an InputError naming the file.

    Args:
        what: What the file should be, for the messages ("profile", "CSV table", ...).
    """
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(f"no such {what}", file=path) from None
    except OSError as e:
        raise InputError(f"cannot read the {what}: {e.strerror or e}", file=path) from None
    if path.is_dir():
        raise InputError(f"is a folder, not a {what}", file=path)
    if not path.is_file():
        raise InputError(f"not a regular file (a device or pipe?), not a {what}", file=path)
    if st.st_size > limit:
        raise InputError(f"{st.st_size / 1e6:.0f} MB is too large for a {what} (at most "
                         f"{limit / 1e6:.0f} MB)", file=path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as e:
        raise InputError(f"cannot read the {what}: {e.strerror or e}", file=path) from None
    if len(data) > limit:
        raise InputError(f"too large for a {what} (at most {limit / 1e6:.0f} MB)", file=path)
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise InputError(f"is {name} text; save the {what} as UTF-8", file=path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[e.start]:02x})", file=path,
                         where=f"line {line}") from None


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # built in C; the keys are only walked when one repeats
    if len(out) != len(pairs):  # json.loads keeps the last silently: which one was meant?
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def parse_json(text: str, *, file: Any = None) -> Any:
    """JSON text to data; malformed or absurdly nested JSON, a key given twice in one object
    and an integer too long for Python to read are InputErrors naming the file.

    NaN and Infinity literals parse, so that a schema can reject them with their JSON path."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise InputError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}",
                         file=file) from None
    except _DuplicateKey as e:
        raise InputError(f"key {e.key!r} given twice in one JSON object (which one is meant?)",
                         file=file) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", file=file) from None
    except ValueError as e:  # Python reads at most 4300 digits of an integer (a DoS guard)
        if "digits" not in str(e):
            raise
        raise InputError("an integer in the JSON has more digits than Python reads (the limit "
                         f"is {sys.get_int_max_str_digits()} digits)", file=file) from None


def _mode_for(path: Path) -> int:
    """Keep an existing file's permissions; new files get the usual 0o666 minus the umask."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def staging(path: str | os.PathLike, *, folder: bool = False) -> Path:
    """A new temporary file (``folder=False``) or folder beside ``path``, to be renamed onto it.

    Its name carries this process's id (``.NAME.PID.xxxx``), so what a writer killed with SIGKILL
    left behind is recognised and removed here, by the next writer of the same path, once that
    process is gone (a live writer's staging is never touched)."""
    path = Path(path)
    # The whole name: a prefix match would take `.a.5.old` (another writer's file, for a path
    # named `a.5.old`) for the leftovers of a process 5.
    mine = re.compile(rf"\.{re.escape(path.name)}\.([1-9][0-9]*)\.[a-z0-9_]{{8}}(\.tmp)?")
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        entries = []
    for e in entries:
        m = mine.fullmatch(e.name)
        if m and not alive(int(m.group(1))):
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                try:
                    os.unlink(e.path)
                except OSError:
                    pass
    prefix = f".{path.name}.{os.getpid()}."
    if folder:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=path.parent))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic rename.

    If anything fails, the previous file (if any) is left untouched and no temporary remains.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = staging(path)
    except OSError as e:  # named for the file asked for, not a folder on the way
        raise type(e)(e.errno, e.strerror, str(path)) from None
    try:
        with open(tmp, "w", encoding=encoding, newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.errno is not None:
            # The staging file is ours; the error is about the file asked for.
            raise type(e)(e.errno, e.strerror, str(path)) from None
        raise
    return path


def dumps_json(data: Any, *, row_lists: tuple[str, ...] = ()) -> str:
    """JSON text with one-space indentation, except that lists under the keys ``row_lists`` hold
    one compact object per line (diff-friendly tables). NaN and infinities are rejected."""
    if not isinstance(data, dict) or not row_lists:
        return json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False)
    parts = []
    for key, value in data.items():
        k = json.dumps(key)
        if key in row_lists and isinstance(value, list) and value:
            rows = ",\n  ".join(json.dumps(v, allow_nan=False, ensure_ascii=False,
                                            separators=(",", ":")) for v in value)
            parts.append(f" {k}: [\n  {rows}\n ]")
        else:
            body = json.dumps(value, indent=1, allow_nan=False, ensure_ascii=False)
            parts.append(f" {k}: " + body.replace("\n", "\n "))
    return "{\n" + ",\n".join(parts) + "\n}"


def atomic_write_json(path: str | os.PathLike, data: Any, *,
                      row_lists: tuple[str, ...] = ()) -> Path:
    """Serialise ``data`` as JSON (see :func:`dumps_json`) and write it atomically."""
    return atomic_write_text(path, dumps_json(data, row_lists=row_lists) + "\n")


def _renameat2_exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: the file system cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(a))


def replace_dir(new: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the folder ``new`` at ``target``, replacing any folder there, so that a kill at any
    moment leaves either the old folder or the new one at ``target``, never neither.

    Both must be on one file system (make ``new`` next to ``target``). Where the file system
    cannot swap two paths atomically, the old folder is moved aside first (a kill between the two
    renames then leaves it at ``.<name>.old``)."""
    new, target = Path(new), Path(target)
    if not target.exists():
        new.rename(target)
        return
    if _renameat2_exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # ``new`` now holds the old folder
        return
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)


class locked:
    """Hold an exclusive lock for a read-modify-write of ``path`` (e.g. two `profiles import
    --into` the same profile at once: without it one import's rows are lost).

    The lock is taken on the file's folder (flock), so no lock file is left behind; it is
    advisory and released when the block ends or the process dies. Where flock is missing
    (not POSIX) it does nothing."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.folder = Path(path).resolve().parent

    def __enter__(self) -> "locked":
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            self.fd = None
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.folder, os.O_RDONLY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing releases the flock


def csv_text(rows: list[dict[str, Any]]) -> str:
    """CSV text of rows (columns: the union of their keys, in first-seen order)."""
    import csv
    import io

    cols = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()
