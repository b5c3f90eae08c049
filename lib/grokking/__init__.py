"""Ambiguous grokking: MLPs trained on where two groups' tables agree, batched over instances (chapters 4-6)."""
