"""paddle-ops-nn: neural-network ops for paddle-core.

The ops are declared in ``ops/*.pbtxt`` (one file per family), their shape and grad rules live
in ``rules``, and their kernels in the compiled module ``_C`` (sources under ``src/``). The core
reads the manifests without importing this package, and imports ``_C`` when a kernel is first
needed.
"""
