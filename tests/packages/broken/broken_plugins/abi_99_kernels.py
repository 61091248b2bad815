"""Stands in for a compiled module built against a future kernel ABI."""

KERNEL_ABI_VERSION = 99


def kernels():
    return {}
