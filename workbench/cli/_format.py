"""Plain-text tables for the command line."""

from __future__ import annotations


def fmt(v: float | None, digits: int = 4) -> str:
    """A number in a few significant digits; ``-`` for a missing value."""
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v:.3g}"
    return f"{v:.{digits}g}"


def table(rows: list[list[str]], header: list[str]) -> str:
    """Columns padded to their widest cell, a rule under the header."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def line(r: list[str]) -> str:
        return "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def whole(lo: int, hi: int = 100_000):
    """An argparse type: a whole number lo..hi (argparse prints one line naming the option)."""
    import argparse

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be {lo}..{hi}, got {v}")
        return v
    parse.__name__ = "whole number"
    return parse


#: The most threads a --threads option takes: a LiteRT interpreter with thousands of threads
#: crashes the process (and 257 fails after the measuring), and no edge device has more cores.
MAX_THREADS = 64
#: The most individuals or generations of an evolutionary solver: the solvers' own limit
#: (``workbench.solvers.evolutionary.MAX_EFFORT``), repeated so that parsing options loads no
#: solver (a test holds the two equal).
MAX_EFFORT = 100_000


def thread_counts(text: str) -> list[int]:
    """An argparse type: thread counts separated by commas ("1,2"), each 1..MAX_THREADS, in
    order, without repeats."""
    import argparse

    parts = [x.strip() for x in text.split(",") if x.strip()]
    out = []
    for x in parts or [text]:
        try:
            v = int(x)
        except ValueError:
            v = None
        if v is None or not 1 <= v <= MAX_THREADS:
            raise argparse.ArgumentTypeError(
                f"thread counts are whole numbers 1..{MAX_THREADS} separated by commas (e.g. "
                f"1,2), got {x!r}" + (f" in {text!r}" if x != text else ""))
        out.append(v)
    return list(dict.fromkeys(out))


def positive_mb(text: str) -> float:
    """An argparse type: a finite number of MB > 0."""
    import argparse
    import math

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MB, got {text!r}") from None
    if not (math.isfinite(v) and 0 < v < 1e7):
        raise argparse.ArgumentTypeError(f"must be a number of MB > 0, got {text!r}")
    return v
