import pytest

from bench.order import p_below


def test_p_below_counts_the_splits_that_leave_a_gap_as_large() -> None:
    # one round a side: of the two splits, one puts the low round on our side
    assert p_below([0.0], [1.0]) == 0.5
    # three a side, all ours below all theirs: one split of the 20 does it
    assert p_below([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]) == pytest.approx(1 / 20)
    # no gap: every split does at least as well
    assert p_below([0.784] * 3, [0.784] * 3) == 1.0


def test_p_below_draws_splits_when_there_are_too_many_to_count() -> None:
    # 12 a side: 2.7 million splits, so 20,000 random ones; 1 in 2.7 million does this
    assert p_below([0.0] * 12, [1.0] * 12) < 0.001
    # the same rounds on both sides: no gap, so at least half the splits leave one as large
    assert p_below([0.5, 0.6] * 6, [0.6, 0.5] * 6) > 0.5
