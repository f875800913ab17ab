"""The serving layer's admission gate, worker slots and memory release (app/serving/admission.py,
hooks.py, memory.py)."""

from __future__ import annotations

from app.serving.admission import InferenceGate
from app.serving.memory import malloc_trim


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


def test_a_worker_takes_the_lowest_free_slot_and_a_replacement_the_dead_ones() -> None:
    """Slots name a worker's socket behind nginx and whether it keeps its memory (KEEP_MEMORY_WORKERS)."""
    import gc
    from types import SimpleNamespace

    from app.serving import hooks

    server = SimpleNamespace(WORKERS={}, cfg=SimpleNamespace(workers=3))
    workers = [SimpleNamespace() for _ in range(3)]
    try:
        for pid, worker in enumerate(workers, 100):
            hooks.pre_fork(server, worker)  # type: ignore[arg-type]
            server.WORKERS[pid] = worker
        assert [worker.slot for worker in workers] == [0, 1, 2]
        del server.WORKERS[100]  # the worker in slot 0 died
        replacement = SimpleNamespace()
        hooks.pre_fork(server, replacement)  # type: ignore[arg-type]
        assert replacement.slot == 0 and hooks.slot_of(replacement) == 0  # type: ignore[arg-type]
    finally:
        gc.unfreeze()


def test_one_worker_is_recycled_at_a_time() -> None:
    """MAX_REQUESTS: a worker past it retires only with the recycling turn, which its warm
    replacement (the same slot) gives back."""
    from app.serving.worker import RecyclingTurn

    turn = RecyclingTurn()
    assert turn.take(0) and turn.take(0)  # slot 0 holds it
    assert not turn.take(1)  # slot 1 serves on
    turn.done(1)  # not the holder: nothing changes
    assert not turn.take(1)
    turn.done(0)  # slot 0's replacement is warm
    assert turn.take(1)


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
