"""The package's surface: the fixed names, the version, the typing files."""

import re
from pathlib import Path

import stsfair
from conftest import REPO

NAMES = ["solve", "verify", "InstanceError", "VerifyError", "SolveError", "SchedulerError",
         "RoundScheduler", "GavelThroughputs", "gavel_throughputs", "solvers", "__version__",
         "StsPolicy", "PolicyError", "mig_gpu", "mig_place", "mig_latencies"]


def test_fixed_names_are_exported():
    for name in NAMES:
        assert hasattr(stsfair, name), name
    assert sorted(stsfair.__all__) == sorted(NAMES)
    assert callable(stsfair.RoundScheduler.restore)


def test_version_is_the_crates():
    cargo = (REPO / "Cargo.toml").read_text()
    version = re.search(r'\[workspace\.package\]\s+version = "([^"]+)"', cargo).group(1)
    assert stsfair.__version__ == version


def test_typing_files_are_installed():
    pkg = Path(stsfair.__file__).parent
    assert (pkg / "py.typed").is_file()
    stubs = (pkg / "_stsfair.pyi").read_text() + (pkg / "__init__.pyi").read_text()
    for name in NAMES:
        assert name in stubs, name
    for method in ["add_job", "remove_job", "update_times", "plan", "report", "report_planned",
                   "snapshot", "restore", "job_times", "solo", "pair", "worker_types", "job_types"]:
        assert f"def {method}(" in stubs, method


def test_exceptions_are_the_documented_kinds():
    assert issubclass(stsfair.InstanceError, ValueError)
    assert issubclass(stsfair.VerifyError, ValueError)
    assert issubclass(stsfair.SchedulerError, ValueError)
    assert issubclass(stsfair.SolveError, RuntimeError)
    assert stsfair.InstanceError.__module__ == "stsfair"
