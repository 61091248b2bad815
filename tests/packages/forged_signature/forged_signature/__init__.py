"""Kernels declaring slots and dtypes their manifest does not bind them to (tests of the check)."""
