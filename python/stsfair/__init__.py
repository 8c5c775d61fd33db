"""stsfair: exact spatiotemporal-fair round scheduling of deep-learning jobs on GPU clusters.

The solver and the round scheduler of the Rust crate ``stsfair``, with Gavel's measured
throughputs. Documents are dicts in the shapes of ``docs/format.md`` (``stsfair/1`` instances,
``stsfair-solution/1`` solutions). See ``docs/python.md``.
"""

from ._stsfair import (
    GavelThroughputs,
    InstanceError,
    PolicyError,
    RoundScheduler,
    SchedulerError,
    SolveError,
    StsPolicy,
    VerifyError,
    __version__,
    gavel_throughputs,
    mig_gpu,
    mig_latencies,
    mig_place,
    solve,
    solvers,
    verify,
)

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
