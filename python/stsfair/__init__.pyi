# The public API: every name is the native module's (see _stsfair.pyi).
from ._stsfair import Document as Document
from ._stsfair import GavelThroughputs as GavelThroughputs
from ._stsfair import InstanceError as InstanceError
from ._stsfair import PolicyError as PolicyError
from ._stsfair import RoundScheduler as RoundScheduler
from ._stsfair import SchedulerError as SchedulerError
from ._stsfair import SolveError as SolveError
from ._stsfair import StsPolicy as StsPolicy
from ._stsfair import VerifyError as VerifyError
from ._stsfair import __version__ as __version__
from ._stsfair import gavel_throughputs as gavel_throughputs
from ._stsfair import mig_gpu as mig_gpu
from ._stsfair import mig_latencies as mig_latencies
from ._stsfair import mig_place as mig_place
from ._stsfair import solve as solve
from ._stsfair import solvers as solvers
from ._stsfair import verify as verify

__all__ = [
    "GavelThroughputs",
    "InstanceError",
    "PolicyError",
    "RoundScheduler",
    "SchedulerError",
    "SolveError",
    "StsPolicy",
    "VerifyError",
    "__version__",
    "gavel_throughputs",
    "mig_gpu",
    "mig_latencies",
    "mig_place",
    "solve",
    "solvers",
    "verify",
]
