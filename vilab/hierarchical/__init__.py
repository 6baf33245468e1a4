"""Hierarchical models on real data: sparse Gaussian VI for GLMMs and state-space models.

Submodules: ``data`` (loaders), ``models`` (targets and block Hessians), ``families`` (arrow and
banded Cholesky factors of the precision), ``fit`` (running the methods), ``metrics`` (M*, mode
error, s.d. ratio) and ``reference`` (the cached NUTS posterior).
"""
