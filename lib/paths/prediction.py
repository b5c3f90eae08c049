"""The edge-token transformer's predictions without gradients, for scoring (chapters 2, 3 and 7).

Every scoring pass of the book (chapter 2's evaluation curves and transition study, chapter 3's
tests, chapter 7's baselines) goes through `predict`. On a CPU it runs each graph on the edge
slots it uses, which at chapter 2's sizes roughly halves a pass; `lib.paths.training` trains.
"""

from __future__ import annotations

import torch

from lib.paths.model import PathTransformer


def used_edge_slots(tokens: torch.Tensor) -> torch.Tensor:
    """(B,) how many leading edge slots each graph of (B, S, 2) `tokens` uses: one past its last
    non-padding edge slot (the last slot, the query, not counted)."""
    filled = (tokens[:, :-1] != 0).any(dim=-1)
    slot_numbers = torch.arange(1, filled.shape[1] + 1, device=tokens.device)
    return (filled * slot_numbers).amax(dim=1) if filled.shape[1] else filled.sum(dim=1)


@torch.no_grad()
def predict(model: PathTransformer, tokens: torch.Tensor, batch_size: int = 8192) -> torch.Tensor:
    """Model predictions on `tokens`, without gradients, in chunks of at most `batch_size` graphs.

    On a CPU, graphs that use the same number of edge slots (`used_edge_slots`) are run together
    on those slots and the query slot alone. The slots cut are padding in every graph of the chunk,
    which attention masks out, so the predictions are the model's on the full tokens up to float
    rounding (within 1e-6 of distances up to 15, tests/test_paths_prediction.py); a scoring pass
    takes about 0.55-0.6 of the time of one over all slots (chapter 2's evaluation sets, one
    thread). On a GPU the extra passes cost more than the padding (60 against 50 ms for 32,768
    graphs of up to 15 vertices, 11 layers, one H200), so there every chunk keeps all slots.
    """
    was_training = model.training
    model.eval()
    if tokens.device.type == "cpu":
        used = used_edge_slots(tokens)
    else:
        used = torch.full((len(tokens),), tokens.shape[1] - 1, device=tokens.device)
    predictions = None
    for width in used.unique().tolist():
        for rows in (used == width).nonzero().squeeze(1).split(batch_size):
            output = model(torch.cat([tokens[rows, :width], tokens[rows, -1:]], dim=1))
            if predictions is None:
                predictions = output.new_empty(len(tokens))
            predictions[rows] = output
    model.train(was_training)
    return predictions if predictions is not None else torch.empty(0, device=tokens.device)


__all__ = ["predict", "used_edge_slots"]
