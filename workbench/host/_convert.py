"""``python -m workbench.host._convert FOLDER SCHEMES [--progress]``: convert and measure a
registered model's schemes in this (child) process, for
:func:`workbench.host.registry.converting._quantise_isolated`. The parent holds the model's
lock; this process writes the record after every scheme and names the scheme it is on in
``FOLDER/.converting``, so that a crash costs only that scheme."""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from ..errors import WorkbenchError
    from . import registry

    folder, schemes = Path(argv[0]), tuple(s for s in argv[1].split(",") if s)
    try:
        rec = registry.ModelRecord.model_validate_json((folder / registry.RECORD).read_text())
        registry._quantise_in(folder, rec, schemes, progress="--progress" in argv, force=True,
                              strict=False, marker=True)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
