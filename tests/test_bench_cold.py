"""The cold matrix's bound (bench/cold.py): the first request after ready at most the larger of
1.10x the steady median and the steady median + 20 ms, as the median over fresh starts."""

from __future__ import annotations

import pytest

from bench.cold import cells_over, over_bound


@pytest.mark.parametrize(("first", "steady", "within"), [
    (0.070, 0.055, True),    # +15 ms on a 55 ms request: 1.27x, inside the 20 ms floor
    (0.080, 0.055, False),   # +25 ms: over both
    (0.540, 0.500, True),    # 1.08x on a long request
    (0.560, 0.500, False),   # 1.12x: the floor (+20 ms) no longer helps
])
def test_the_bound_is_the_larger_of_the_ratio_and_the_floor(first: float, steady: float, within: bool) -> None:
    run = {"first_s": first, "steady_s": steady, "first_pair_s": steady, "pair_s": steady}
    assert (over_bound(run, "wide") <= 1.0) is within


def test_a_cell_is_judged_on_the_median_over_its_starts() -> None:
    def run(first: float) -> dict[str, float]:
        return {"first_s": first, "steady_s": 0.1, "first_pair_s": 0.1, "pair_s": 0.1}

    one_slow_start = {"face analysis, small HEIC": {"2": [run(0.100), run(0.300), run(0.105)]}}
    two_slow_starts = {"face analysis, small HEIC": {"2": [run(0.100), run(0.300), run(0.200)]}}
    assert cells_over(one_slow_start) == []
    assert cells_over(two_slow_starts) == ["face analysis, small HEIC, 2 workers, wide lane"]
