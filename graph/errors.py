"""Errors of the graph level: a model it cannot import, quantise or map, named with the reason."""
import contextlib

from intrinsics.errors import CompileError
from vta_sim.errors import VTAError


class GraphError(CompileError):
    """A model, op or input the graph level refuses; the message names it and what is accepted."""


@contextlib.contextmanager
def stage(what: str):
    """The error boundary of one stage of a model's path (reading, quantising, lowering,
    compiling, running): a failure that is not already a toolkit error (from onnxruntime, TVM, or
    a bug) leaves as one GraphError naming the stage and the original error, which stays chained
    for `vta-sim model --debug`."""
    try:
        yield
    except VTAError:
        raise
    except Exception as err:  # noqa: BLE001 - the boundary: everything else becomes one line
        first = (str(err).strip().splitlines() or [""])[-1][:300]
        raise GraphError(f"{what} failed: {type(err).__name__}: {first} (the model may use something "
                         "the graph level does not handle yet; --debug shows the traceback)") from err
