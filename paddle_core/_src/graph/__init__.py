"""Layer 4, graph: programs as data.

Variables, operators, blocks and programs; appending an op (validate, bind, infer shapes);
shape rules; ProgramDesc conversion and files; backward. Imports from plugins, spec and base.
"""
