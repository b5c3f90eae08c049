"""One hop per layer, doubling or tripling (lib.paths.radius_laws, chapter 7)."""

from lib.paths.radius_laws import LAWS, RadiusPoint, best_laws, fit_laws, informative, law_radius


def points_of(law: str, depths=(2, 4, 6), cap: int = 6, seeds=(0, 1, 2)) -> list[RadiusPoint]:
    return [RadiusPoint(depth, seed, "fact", layer, law_radius(law, layer, cap), cap)
            for depth in depths for seed in seeds for layer in range(1, depth + 1)]


def test_synthetic_radii_recover_the_law_that_made_them():
    for law in LAWS:
        fits = fit_laws(points_of(law))
        assert best_laws(fits) == [law]
        assert fits[law]["rms"] == 0 and fits[law]["exact"] == fits[law]["points"]
    # One hop per layer, off by one now and then: still one hop, and doubling runs ahead of it.
    noisy = [RadiusPoint(p.depth, p.seed, p.fact, p.layer, max(p.radius - (p.seed == 1), 0), p.cap)
             for p in points_of("one hop per layer (l)")]
    fits = fit_laws(noisy)
    assert best_laws(fits) == ["one hop per layer (l)"] and fits["doubling (2^l - 1)"]["mean_error"] < 0


def test_the_cap_and_the_points_that_cannot_tell_the_laws_apart():
    assert law_radius("doubling (2^l - 1)", 3, 5) == 5 and law_radius("tripling (3^l)", 0, 5) == 1
    assert law_radius("one hop per layer (l)", 2, 1) == 1
    points = [RadiusPoint(4, 0, "f", 1, 1, 5), RadiusPoint(4, 0, "f", 2, 2, 5), RadiusPoint(4, 0, "f", 4, 5, 2)]
    # After layer 1 one hop and doubling agree, but tripling does not; beyond a cap of 2 all agree.
    assert informative(points) == points[:2]
    assert best_laws(fit_laws([])) == [] and fit_laws([])["doubling (2^l - 1)"]["points"] == 0
