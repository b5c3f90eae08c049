"""The main run's learning order: its common lengths, whether they drop in length order, its hardest label (lib.paths.main_run_summary)."""

from lib.paths.main_run_summary import learning_order


def test_learning_order_finds_common_lengths_order_and_the_hardest_label():
    def drop(step):
        return {"dropped": step is not None, "step": step}
    summary = {"drop_by_length": {1: drop(40), 2: drop(180), 3: drop(150), 8: drop(None)},
               "count_by_length": {1: 500, 2: 400, 3: 90, 8: 10},
               "loss_by_length": {1: 0.01, 2: 0.02, 3: 0.3, 8: 0.2}}
    order = learning_order(summary, unreachable_label=8)
    assert order.common_lengths == (1, 2, 3)            # 10 of 1,000 examples is under 2%
    assert order.in_length_order is False               # 3 dropped before 2
    assert (order.hardest_length, order.hardest_unreachable, order.hardest_loss, order.hardest_count) == \
        (3, False, 0.3, 90)
    summary["loss_by_length"][8] = 0.5                   # the unreachable label is the hardest
    assert learning_order(summary, unreachable_label=8).hardest_unreachable is True
