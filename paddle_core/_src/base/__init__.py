"""Layer 1, base: what every other layer needs and that needs nothing of ours.

Errors, dtypes, the device interface and the core's own device types, the generated proto
module (``paddle_core.proto``), and the compiled runtime (a C++ leaf: kernel capsule checks and
the run loop). Imports nothing from the layers above.
"""
