"""Transformers trained on graph shortest paths: data, model, training, fine-tuning, tests (chapters 2, 3).

Graphs are sequences of edge tokens (a, b) over vertex ids 1..n; token 0 is padding; the label
is the BFS distance from vertex 1 to the target (vertex 2 in pre-training).
"""
