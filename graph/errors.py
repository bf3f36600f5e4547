"""Errors of the graph level: a model it cannot import, quantise or map, named with the reason."""
from intrinsics.errors import CompileError


class GraphError(CompileError):
    """A model, op or input the graph level refuses; the message names it and what is accepted."""
