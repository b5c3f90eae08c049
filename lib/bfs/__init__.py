"""The hand-built transformer that runs breadth-first search, its graphs and its damage study (chapter 1).

Vertex v of the study (1..n) is row and column v - 1 of an adjacency matrix: the source,
vertex 1, is index 0 and the target, vertex 2, is index 1.
"""
