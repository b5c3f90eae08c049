"""One module per chapter (its parameters, runs and summaries) and one for its figures.

The science lives in `lib.bfs`, `lib.paths` and `lib.grokking`; these modules only put it
together in the order the chapter's notebook tells it.
"""
