"""Layer 6, model: Model and Expression, over programs and the run layer.

A Model owns a main and a startup program, a stack of scopes, the parameter -> gradient map
and a device; an Expression is a variable's value at one point of a model's net, computed on
demand by running only the ops it needs (a Subgraph, planned once) and cached until a feed or
a persistable value it reads changes. Layers and the generated ops reach a model through
``methods``. Imports from every layer below.
"""
