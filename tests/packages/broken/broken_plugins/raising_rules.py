"""A rules module that fails on import, as a plugin with a bug would."""

raise RuntimeError("raising_rules is broken on purpose")
