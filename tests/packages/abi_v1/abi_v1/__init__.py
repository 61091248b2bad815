"""Kernels built against kernel ABI 1's first layout (tests of the core's compatibility)."""
