"""The serving layer's admission gate and memory keepers (app/serving/admission.py, memory.py)."""

from __future__ import annotations

from app.serving.admission import InferenceGate
from app.serving.memory import MemoryKeepers, malloc_trim


def test_inference_gate_releases_after_a_request_only_when_asked() -> None:
    assert malloc_trim() is True  # glibc here
    eager = InferenceGate(queue_depth=1, wait_timeout=1.0, release_after_request=True)
    lazy = InferenceGate(queue_depth=1, wait_timeout=1.0)
    for gate in (eager, lazy):
        with gate.slot():
            assert gate.idle_for() == 0.0
    assert eager.released is True and lazy.released is False
    assert lazy.idle_for() >= 0.0
    lazy.release()
    assert lazy.released is True


def test_memory_keepers_hand_out_slots_and_free_a_dead_workers() -> None:
    keepers = MemoryKeepers(1)
    assert keepers.claim(101) and keepers.claim(101)  # idempotent for the holder
    assert not keepers.claim(102) and keepers.holds(101) and not keepers.holds(102)
    keepers.drop(102)  # not a keeper: nothing changes
    assert keepers.holds(101)
    keepers.drop(101)  # the master, when the keeper has exited
    assert keepers.claim(102) and keepers.holds(102) and not keepers.holds(101)
    two = MemoryKeepers(2)
    assert two.claim(1) and two.claim(2) and not two.claim(3)
    none = MemoryKeepers(0)
    assert not none.claim(1) and not none.holds(1)


def test_inferring_workers_count_and_drop_the_dead() -> None:
    from app.serving.admission import InferringWorkers

    inferring = InferringWorkers(slots=4)
    assert inferring.enter(11) == 1 and inferring.enter(11) == 1  # the same worker counts once
    assert inferring.enter(12) == 2
    inferring.leave(11)
    assert inferring.count == 1
    inferring.drop(12)  # the master, for a worker killed mid-inference
    assert inferring.count == 0 and inferring.enter(13) == 1


def test_the_gate_takes_the_wide_lane_only_when_alone() -> None:
    from app.models import sessions
    from app.serving.admission import InferringWorkers

    inferring = InferringWorkers(slots=4)
    gate = InferenceGate(queue_depth=1, wait_timeout=1.0, inferring=inferring)
    with gate.slot():
        assert sessions.current_lane() == "narrow"  # no wide lane opened in this worker
    gate.wide_threads = 2
    with gate.slot():
        assert sessions.current_lane() == "wide"
    inferring.enter(99999)  # another worker is inferring
    with gate.slot():
        assert sessions.current_lane() == "narrow"
    assert gate.lanes_taken == {"wide": 1, "narrow": 2}
    assert gate.describe()["lanes"] == {"wide_threads": 2, "taken": {"wide": 1, "narrow": 2}}
