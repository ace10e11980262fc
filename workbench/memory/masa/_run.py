"""One real MASA run in this fresh process (see ``workbench.lab.experiments.masa.pressure``).

Usage: ``python -m workbench.memory.masa._run SPEC.pkl``. SPEC holds each network's stored root
(a skeleton and its per-layer weight files), the profiles the scheduler plans with, the jobs, the
policy and the batch each network runs on. The run's paging is whatever the kernel does to this
process (its memory group), so no penalty is modelled: ``swap_bps`` is infinite. Prints one JSON
line. Imports numpy and the layer executor only.
"""

import json
import math
import pickle
import sys
from pathlib import Path

from workbench.procfs import status_kb


def main(argv: list[str]) -> int:
    with open(argv[0], "rb") as fh:
        spec = pickle.load(fh)
    from workbench.memory.masa import run_real
    from workbench.memory.measure import SKELETON, from_skeleton

    graphs = {}
    for role, root in spec["roots"].items():
        with open(Path(root) / SKELETON, "rb") as fh:
            graphs[role] = from_skeleton(pickle.load(fh))
    import numpy as np

    a = np.ones((512, 512), np.float32)
    (a @ a).sum()  # BLAS buffers before the baseline
    del a
    base = status_kb("VmRSS")
    batch = spec.get("batch", 1)  # images each network runs on at once (MASA Fig. 12)
    x = {role: np.zeros((batch,) + tuple(g.input_shape), np.float32)
         for role, g in graphs.items()}
    if spec.get("inputs_per_job"):  # every image held apart, as a batch holds its images
        x.update({(j.id, role): np.zeros((batch,) + tuple(graphs[role].input_shape),
                                         np.float32)
                  for j in spec["jobs"] for role in j.nets})
    r = run_real(graphs, {k: Path(v) for k, v in spec["roots"].items()}, spec["jobs"],
                 policy=spec["policy"], admission=spec["admission"], budget=spec["budget"],
                 workers=spec["workers"], nets=spec["profiles"], swap_bps=math.inf, x=x)
    mb = 1024 / 1e6
    print(json.dumps({
        "mean_response_s": r.mean_response, "response_s": [float(v) for v in r.response],
        "makespan_s": r.makespan, "wall_s": r.wall_s, "overcommitted_tasks": r.overcommit_tasks,
        "scheduler_peak_mb": r.peak_bytes / 1e6, "base_mb": base * mb,
        "peak_rss_mb": status_kb("VmHWM") * mb}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
