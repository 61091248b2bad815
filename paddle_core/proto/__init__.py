"""Generated protobuf classes for protos/framework.proto (regenerate with protos/generate.py)."""
