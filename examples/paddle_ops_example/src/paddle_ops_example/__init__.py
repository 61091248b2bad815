"""paddle-ops-example: a paddle-core plugin. Its ops are declared in manifest/*.pbtxt, computed by _C."""
