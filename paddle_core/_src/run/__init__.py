"""Layer 5, run: executing programs.

Scopes, planning (prune, select kernels, concrete shapes), prepared programs and their
runners (the compiled loop on host memory, a Python loop elsewhere), and the executor that
caches plans. Imports from every layer below.
"""
