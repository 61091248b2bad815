"""Layer 2, spec: what a manifest declares and what it means.

Attribute types and values, manifest parsing and checks, the references a manifest makes to
Python code, attribute validation (pydantic), and how an op reads to a person (signature,
docstring). Imports from base only; never imports plugin code.
"""
