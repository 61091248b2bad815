"""my-ops: an example paddle-core plugin (see ops.pbtxt, src/swish_cpu.cpp)."""
