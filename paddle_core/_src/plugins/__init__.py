"""Layer 3, plugins: which plugins are installed, and the ops, kernels and devices they bring.

User settings, discovery (entry points and manifests, no plugin code), the on-disk index,
loading plugin code and compiled kernels on first use, the op registry and its conflict rule,
pluggy hooks, and the device registry. Imports from spec and base.
"""
