"""Multi-objective formulation of SLOs over device profiles (CARIn section 4).

Only numpy is imported here: the problem layer must stay usable from the thin runtime's tools.
"""

from .optimality import OptimalityResult, feasible_mask, optimality

__all__ = ["OptimalityResult", "feasible_mask", "optimality"]
