"""A further seed's analysis measures each size and the depth check on the same fixed graphs (lib.paths.replicate_analysis)."""

from lib.paths.generalization_tests import scale_for
from lib.paths.model import build_model
from lib.paths.replicate_analysis import seed_analysis
from lib.paths.training import PathTrainingConfig


def test_the_seed_analysis_measures_each_size_and_the_depth_check_on_fixed_graphs():
    base = PathTrainingConfig(n_layers=1, n_min=3, n_max=8, batch_size=8, lr_schedule=((1, 1e-3),))
    model = build_model(base.model_config, seed=0).eval()
    analyse = seed_analysis(base.sampler, scale_for(base, 5), graphs_per_size=32, per_cell=32, seed=0,
                            max_proposals=1 << 12)
    measured = analyse(model, model)
    assert set(measured) == {"onpath_by_graph_size", "depth_check"}
    assert {row["n_vertices"] for row in measured["onpath_by_graph_size"]} <= set(range(3, 9))
    assert all(cell["n_vertices"] == 8 for cell in measured["depth_check"])
    assert repr(measured) == repr(analyse(model, model))  # every seed's models meet the same graphs (NaN alike)
