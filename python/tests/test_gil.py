"""`solve` and `RoundScheduler.plan` release the GIL: a Python thread keeps counting meanwhile."""

import threading
import time

import stsfair
from conftest import REPO

# A round the reference dense DP takes about a second on (`stsfair gen --gavel --jobs 150
# --count 12 --seed 0`): the fast DP answers every shipped round in well under 0.2 s (the hard
# round 4 in 0.03 s), too quick to see a counting thread run beside it.
SLOW = REPO / "tests" / "data" / "gavel-12x3-150.json"
SOLVER = "dp-dense"


def count_during(call):
    """How far a counting thread gets while `call` runs in this thread, and the call's seconds."""
    state = {"n": 0, "stop": False}
    started = threading.Event()

    def counter():
        started.set()
        while not state["stop"]:
            state["n"] += 1

    t = threading.Thread(target=counter)
    t.start()
    started.wait()
    time.sleep(0.05)
    before = state["n"]
    t0 = time.perf_counter()
    call()
    seconds = time.perf_counter() - t0
    during = state["n"] - before
    state["stop"] = True
    t.join()
    return during, seconds


def test_solve_releases_the_gil():
    during, seconds = count_during(lambda: stsfair.solve(SLOW, solver=SOLVER))
    assert seconds > 0.2, "the solve is too quick to tell"
    # Holding the GIL, the counter would get at most a switch interval (5 ms) in: a few
    # thousand increments. Released, it counts for the whole call: millions.
    assert during > 100_000, (during, seconds)


def test_plan_releases_the_gil():
    s = stsfair.RoundScheduler(SLOW, solver=SOLVER)
    during, seconds = count_during(s.plan)
    assert seconds > 0.2
    assert during > 100_000, (during, seconds)
