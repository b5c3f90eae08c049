"""The chance that random orders of the drops agree in every seed (lib.paths.transition_drops)."""


def test_the_chance_of_an_order_is_that_of_random_orders_agreeing_in_every_seed():
    from lib.paths.transition_drops import chance_of_order
    from lib.paths.phase_transitions import DropOrder
    assert chance_of_order(DropOrder(((1,), (2,)), (), ()), 3) == 0.125          # (1/2)^3
    assert abs(chance_of_order(DropOrder(((1,), (2, 3)), (), ()), 2) - 1 / 9) < 1e-12   # (2!/3!)^2
