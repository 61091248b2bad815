"""paddle-ops-nn: neural-network ops for paddle-core.

The ops are declared in ``manifest/*.pbtxt`` (one file per family, each op with its CPU and
CUDA kernels), their shape and grad rules live in ``rules`` (a module per family), and their
kernels in the compiled module ``_C`` (sources under ``src/``, each file registering its own).
The core reads the manifests, and ``kernels.json`` (each kernel's dtypes, which the build
records), without importing this package, and imports ``_C`` when a kernel is first needed.
"""
