"""`solve` and `RoundScheduler.plan` release the GIL: a Python thread keeps counting meanwhile."""

import threading
import time

import stsfair
from conftest import INSTANCES

# The dense reference DP takes about half a second on this 40-job instance.
SLOW = INSTANCES / "gavel-8x3-40.json"


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
    during, seconds = count_during(lambda: stsfair.solve(SLOW, solver="dp-dense"))
    assert seconds > 0.1, "the solve is too quick to tell"
    # Holding the GIL, the counter would get at most a switch interval (5 ms) in: a few
    # thousand increments. Released, it counts for the whole call: millions.
    assert during > 100_000, (during, seconds)


def test_plan_releases_the_gil():
    s = stsfair.RoundScheduler(SLOW, solver="dp-dense")
    during, seconds = count_during(s.plan)
    assert seconds > 0.1
    assert during > 100_000, (during, seconds)
