"""Deliberately broken paddle-core plugins (see ../pyproject.toml). Importing this package is
harmless; importing raising_rules is not."""
