"""Activation capture, ablation and patching on a path transformer (lib.paths.activations,
lib.paths.interventions): the edits change nothing when they should not, and exactly what
they say otherwise."""

import pytest
import torch

from lib.paths.activations import capture, unfused_attention
from lib.paths.interventions import (
    heads_replaced, mean_head_outputs, mean_module_output, mlp_replaced, patch_along, residual_edited,
)
from lib.paths.model import PathTransformerConfig, build_model
from lib.paths.sampler import sample_batch


@pytest.fixture(scope="module")
def model_and_batch():
    model = build_model(PathTransformerConfig(n_layers=3, max_vertex_id=8), seed=0).eval()
    tokens, labels = sample_batch(64, "pretrain", 3, 8, torch.Generator().manual_seed(1))
    return model, tokens


def predict(model, tokens):
    """Predictions through the encoder's unfused path, the one every edit runs on."""
    with torch.no_grad(), unfused_attention():
        return model(tokens)


def attention_outputs(model, tokens, layer):
    """The attention block's output (after its output projection) at every token of layer `layer`."""
    seen = []
    handle = model.encoder.layers[layer].self_attn.register_forward_hook(lambda m, args, out: seen.append(out[0]))
    predict(model, tokens)
    handle.remove()
    return seen[0]


def test_capture_keeps_every_layer_and_changes_nothing(model_and_batch):
    model, tokens = model_and_batch
    activations = capture(model, tokens, chunk=25)
    assert activations.residual.shape == (4, 64, 9, 64) and activations.attention.shape == (3, 64, 2, 9, 9)
    assert torch.allclose(activations.prediction, predict(model, tokens), atol=1e-5)
    # The last residual is what the readout reads; attention rows sum to one and skip padding.
    assert torch.allclose(model.readout(activations.residual[-1][:, -1]).squeeze(-1).detach(),
                          activations.prediction, atol=1e-5)
    assert torch.allclose(activations.attention.sum(-1), torch.ones(3, 64, 2, 9))
    padded_keys = activations.padding[:, None, None, :].expand(-1, 2, 9, -1)
    assert (activations.attention[0][padded_keys] == 0).all()


def test_ablating_nothing_or_patching_a_run_into_itself_changes_nothing(model_and_batch):
    model, tokens = model_and_batch
    clean = predict(model, tokens)
    with heads_replaced(model, {}), mlp_replaced(model, {}):
        assert torch.equal(predict(model, tokens), clean)
    own = capture(model, tokens).residual
    direction = torch.nn.functional.normalize(torch.randn(64, generator=torch.Generator().manual_seed(0)), dim=0)
    for index in range(4):
        with residual_edited(model, index, patch_along(own[index][:, -1], direction)):
            assert torch.allclose(predict(model, tokens), clean, atol=1e-5)
    assert torch.allclose(predict(model, tokens), clean, atol=1e-5)  # hooks removed on exit


def test_mean_head_outputs_average_to_the_attention_blocks_mean_output(model_and_batch):
    """The output projection is linear, so the mean over queries of the block's output is the
    projection of the heads' mean outputs: an independent check of `mean_head_outputs`."""
    model, tokens = model_and_batch
    means = mean_head_outputs(model, capture(model, tokens))
    keep = ~(tokens == 0).all(dim=-1)
    for layer in range(3):
        projection = model.encoder.layers[layer].self_attn.out_proj
        expected = projection(means[layer].flatten()).detach()
        assert torch.allclose(attention_outputs(model, tokens, layer)[keep].mean(0), expected, atol=1e-5)


def test_replaced_heads_output_their_constants_and_the_model_is_restored(model_and_batch):
    model, tokens = model_and_batch
    clean = predict(model, tokens)
    weights = model.encoder.layers[1].self_attn.in_proj_weight.clone()
    constants = {(1, 0): torch.arange(32.0) / 32, (1, 1): -torch.ones(32)}
    with heads_replaced(model, constants):
        edited = attention_outputs(model, tokens, 1)
        ablated = predict(model, tokens)
    projection = model.encoder.layers[1].self_attn.out_proj
    expected = projection(torch.cat([constants[(1, 0)], constants[(1, 1)]])).detach()
    keep = ~(tokens == 0).all(dim=-1)
    assert torch.allclose(edited[keep], expected.expand(int(keep.sum()), -1), atol=1e-5)
    assert not torch.allclose(ablated, clean)
    assert torch.equal(model.encoder.layers[1].self_attn.in_proj_weight, weights)   # restored
    assert torch.equal(predict(model, tokens), clean)


def test_a_replaced_mlp_outputs_its_constant(model_and_batch):
    model, tokens = model_and_batch
    layer = model.encoder.layers[2]
    mean = mean_module_output(model, layer.linear2, tokens)
    after_attention, into_norm = [], []
    handles = [layer.norm1.register_forward_hook(lambda m, args, out: after_attention.append(out)),
               layer.norm2.register_forward_pre_hook(lambda m, args: into_norm.append(args[0]))]
    with mlp_replaced(model, {2: mean}):
        predict(model, tokens)
    for handle in handles:
        handle.remove()
    # Post-LN: norm2 reads (stream after attention) + (feed-forward output).
    assert torch.allclose(into_norm[0] - after_attention[0], mean.expand_as(into_norm[0]), atol=1e-5)


def test_a_residual_index_outside_the_model_is_refused(model_and_batch):
    model, _ = model_and_batch
    with pytest.raises(ValueError, match="between 0 and 3"):
        with residual_edited(model, 4, lambda x: x):
            pass
