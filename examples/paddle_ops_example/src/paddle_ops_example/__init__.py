"""paddle-ops-example: a paddle-core plugin. Its ops are declared in ops/*.pbtxt, computed by _C."""
