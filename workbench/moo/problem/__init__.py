"""The discrete multi-objective problem over a device's configuration table (CARIn section 4.1):
:class:`DiscreteProblem`.

The parts: :mod:`.terms` (objectives and constraints resolved against the tasks, what an
evaluation returns), :mod:`.tasks` (a task's rows as numpy columns), :mod:`.coexec` (latency
under co-execution), :mod:`.discrete` (the problem: evaluation, the feasible space, CARIn's
optimality over it, how sure its values are, describing combinations).
"""

from .discrete import DEFAULT_CHUNK as DEFAULT_CHUNK
from .discrete import DiscreteProblem as DiscreteProblem
from .tasks import TaskSpace as TaskSpace
from .terms import Bound as Bound
from .terms import Evaluation as Evaluation
from .terms import Term as Term
