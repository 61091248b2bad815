"""Kernels built against a forged kernel ABI header (tests of the layout fingerprint)."""
