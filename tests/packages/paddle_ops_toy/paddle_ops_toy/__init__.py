"""paddle-ops-toy: NumPy-kernel ops for testing paddle-core. Its ops are declared in ops.pbtxt;
shape rules and kernels live in rules.py and are imported only when first used."""
