"""paddle-core's implementation, in layers; users import from ``paddle_core``.

Each layer imports only from the layers below it (tests/core/test_layers.py enforces it)::

    surface   paddle_core: ops, rules, testing, cli, layers, optimizers, io, profiler, __init__
              (re-exports)
    model     Model, Expression, subgraphs, how layers and ops reach a model
    run       scope, planning, prepared programs, the executor, the profiler
    graph     variables, operators, blocks, programs, append, shape inference, backward
    plugins   settings, discovery, the index, loading, the registry, hooks, device registry
    spec      attribute values, manifests, validation, how an op reads to a person
    base      errors, dtypes, device types, the compiled runtime, the generated proto module

docs/architecture.md follows one op through them.
"""
