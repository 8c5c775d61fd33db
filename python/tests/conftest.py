"""Shared helpers: the repository's paths and the `stsfair` binary the answers are compared with.

The binary is `target/release/stsfair` (built by `cargo test --release` in `.ci/run`), or the
one `STSFAIR_CLI` names. A missing binary fails the tests that need it (it is never skipped:
skipped comparisons would pass silently).
"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTANCES = REPO / "instances"


def cli_path() -> Path:
    return Path(os.environ.get("STSFAIR_CLI", REPO / "target" / "release" / "stsfair"))


@pytest.fixture(scope="session")
def cli():
    """Runs the CLI: cli(*args) -> CompletedProcess (text)."""
    path = cli_path()
    if not path.is_file():
        pytest.fail(f"{path} is missing: build it with `cargo build --release` (or set STSFAIR_CLI)")

    def run(*args, check_codes=(0, 2, 3)):
        r = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True, timeout=600)
        assert r.returncode in check_codes, (args, r.returncode, r.stderr)
        return r

    return run
