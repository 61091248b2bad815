"""Kernels built against kernel ABI 1 as released (tests of the core's compatibility)."""
