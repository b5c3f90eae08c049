"""Settled layers and the spread of the stated radii over seeds (lib.paths.reach_radii)."""

from lib.paths.layer_probes import DISTANCE, FACTS
from lib.paths.reach_radii import seed_spread, settled_layer


def test_settled_layers_and_the_spread_over_seeds_follow_the_radii():
    assert settled_layer([0, 1, None, 7], 7) == 3
    spread = seed_spread({0: {fact: {"stated": [0, 1, None]} for fact in FACTS},
                          1: {fact: {"stated": [0, 2, None]} for fact in FACTS}})
    assert spread[DISTANCE]["range"] == [[0, 0], [1, 2], None] and spread[DISTANCE]["disputed_seeds"] == [0, 0, 2]
    assert settled_layer([0, 1, 2, 7, 7], 7) == 3 and settled_layer([0, 1, 2], 7) is None
