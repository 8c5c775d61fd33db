# Type stubs of the native module (python/src/lib.rs); `stsfair` re-exports every name.
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__version__: str

Document = Union[Mapping[str, Any], str, "os.PathLike[str]"]
"""A document: a dict in the format's shape, or a str / os.PathLike naming a JSON file."""

class InstanceError(ValueError):
    """An invalid document (instance, job, times or snapshot); the message names the JSON path and the rule."""

class VerifyError(ValueError):
    """A solution that does not check out against its instance."""

class SolveError(RuntimeError):
    """The solver could not answer (e.g. the DP's state space is past its limit)."""

class PolicyError(ValueError):
    """A StsPolicy call the policy refuses (a setting, a job or a snapshot that breaks a rule)."""

class SchedulerError(ValueError):
    """A RoundScheduler call the scheduler refuses (unknown or duplicate job, no plan to report, ...)."""

def solve(instance: Document, solver: str = "dp", time_limit: Optional[float] = None) -> Dict[str, Any]:
    """Solves one round; returns the stsfair-solution/1 document (as `stsfair solve --json`). Releases the GIL. time_limit: seconds (finite, > 0) a solve may take, as `--time-limit`: stopped, dp answers with its best solution as "feasible" (stats.gap, stats.bound), dp-dense and a dp without one raise SolveError."""

def verify(instance: Document, solution: Document) -> Dict[str, Any]:
    """Recomputes `solution` from `instance`; raises VerifyError naming what is wrong (an optimal claim below the exact DP's re-solve among them). Returns {"objective", "optimality": "certified" | "suboptimal" | "not certified" | "not applicable", "optimum", "reason"}."""

def solvers() -> List[str]:
    """The solver names of this build: dp, dp-dense, brute (and ilp, dp+ilp with HiGHS)."""

class RoundScheduler:
    """The round-based fair scheduler: deficits across rounds, relaxation, placement."""

    def __init__(self, cluster: Document, solver: str = "dp", prices: str = "off", second_stage: Optional[float] = None, time_limit: Optional[float] = None) -> None:
        """time_limit: seconds each solve of a plan may take (a relaxed round makes several), as `solve`'s. prices: "off" (MODEL.md section 4 as is) or "lp" (forced jobs' service priced by the long-run LP, as `stsfair rounds` by default; needs a build with HiGHS). second_stage: None, or an exponent in [0, 1]: after the round problem chooses who runs, where they run is chosen again with the weights raised to it (docs/rounds.md); SchedulerError outside [0, 1]."""
    def add_job(self, job: Mapping[str, Any]) -> None:
        """Adds a job object of the format (id, times, optional weight, workers, deficit)."""
    def remove_job(self, id: str) -> float:
        """Removes an active job; returns its deficit."""
    def update_times(self, id: str, times: Sequence[Mapping[str, Any]]) -> None:
        """Replaces a job's times ({"gpu", "slot", "sec_per_iter"} dicts); weight, workers, deficit kept."""
    def plan(self) -> Dict[str, Any]:
        """Plans the next round (releases the GIL): objective, relaxed, solves, fallback_solves, feasible_solves (solves a time limit stopped), round, jobs, placement."""
    def report(self, realized: Mapping[str, float]) -> List[Dict[str, Any]]:
        """Reports realized throughputs (it/s) of the jobs that ran; returns each job's {job, sigma, deficit}."""
    def report_planned(self, plan: Mapping[str, Any]) -> List[Dict[str, Any]]:
        """Reports that every job of `plan` realized its planned throughput."""
    def snapshot(self) -> str:
        """The scheduler's whole state as a stsfair-scheduler/1 JSON document."""
    @staticmethod
    def restore(snapshot: str, solver: str = "dp", prices: str = "off", second_stage: Optional[float] = None, time_limit: Optional[float] = None) -> "RoundScheduler":
        """A scheduler from a snapshot (which holds neither `prices`, `second_stage` nor `time_limit`: give the same again); raises InstanceError naming the field of a bad one."""
    def deficits(self) -> Dict[str, float]:
        """D_j of every active job, in the order they were added."""
    @property
    def round(self) -> int:
        """Rounds reported so far."""
    @property
    def solver(self) -> str:
        """The solver's name."""
    @property
    def second_stage(self) -> Optional[float]:
        """The second stage's exponent, or None (an exponent of 1 reads back as None). Settable between plans: an exponent in [0, 1] or None; SchedulerError outside [0, 1], and nothing changes."""
    @second_stage.setter
    def second_stage(self, exponent: Optional[float]) -> None: ...

class GavelThroughputs:
    """Gavel's measured throughputs (vendored): worker types, job types, solo and pair throughputs."""

    @property
    def worker_types(self) -> List[str]: ...
    @property
    def job_types(self) -> List[str]:
        """Job types by slug (`resnet-18-bs16`, `a3c-sf4`)."""
    def job_type(self, job: str) -> Dict[str, Any]:
        """slug, key, model, family, batch_size (or None), scale_factor (workers)."""
    def solo(self, worker: str, job: str) -> Optional[float]:
        """Measured solo throughput (it/s), None where the job type cannot run."""
    def pair(self, worker: str, job: str, other: str) -> Optional[Tuple[float, float]]:
        """Measured (job, other) throughputs sharing one GPU; None if they cannot share or were not measured."""
    def job_times(self, job: str, gpu_types: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """A job's `times` on these GPU types (dicts with name, units, slot_sizes), as `stsfair gen --gavel` writes them."""

def gavel_throughputs(seed: int = 0) -> GavelThroughputs:
    """The bundled Gavel table; `seed` seeds the predictor of unmeasured pairs (as `gen --gavel --seed`)."""

def mig_gpu(name: str) -> Dict[str, Any]:
    """A vendored MIG GPU model ("a100-40gb", "a100-80gb", "h100-80gb"): name, compute_slices, memory_slices, profiles (name, compute, memory, starts; one per compute size) and layouts (the maximal ones). ValueError for an unknown or unsourced model."""

def mig_place(name: str, layout: Sequence[int]) -> List[Dict[str, Any]]:
    """The instances of a layout (compute sizes) on the model, largest first: profile, compute, start and memory (memory slices). ValueError naming the model, the layout and the rule for a layout the placement rules forbid."""

def mig_latencies() -> List[Dict[str, Any]]:
    """MISO's 32 jobs measured on the A100-40GB: name, model, batch, latency (mean seconds per iteration by profile; a profile the job does not fit is absent)."""

class StsPolicy:
    """The library's round policy (stsfair::policy::StsPolicy): events in, a plan out."""
    def __init__(
        self,
        cluster: Sequence[Tuple[str, int]],
        throughputs: Union[GavelThroughputs, Mapping[str, Any]],
        options: Optional[Mapping[str, Any]] = None,
    ) -> None: ...
    def job_arrived(
        self,
        now: float,
        job: int,
        job_type: Union[int, str],
        weight: float = 1.0,
        arrival: Optional[float] = None,
        steps: Optional[float] = None,
    ) -> None: ...
    def job_finished(self, job: int) -> None: ...
    def round_realized(self, seconds: float, realized: Mapping[int, Tuple[float, float]]) -> None: ...
    def plan(self, now: float) -> Dict[str, Any]: ...
    def snapshot(self) -> str: ...
    @staticmethod
    def restore(snapshot: str, throughputs: Union[GavelThroughputs, Mapping[str, Any]]) -> "StsPolicy": ...
    @property
    def active(self) -> List[int]: ...
    def attained(self, job: int) -> float: ...
    @property
    def solver_seconds(self) -> float: ...
