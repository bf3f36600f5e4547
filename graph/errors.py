"""Errors of the graph level: a model it cannot import, quantise or map, named with the reason."""
import contextlib

from vta_sim.errors import CompileError
from vta_sim.errors import VTAError


class GraphError(CompileError):
    """A model, op or input the graph level refuses; the message names it and what is accepted."""


def one_line(err: BaseException, limit: int = 300) -> str:
    """`Type: last line of the message`: what a third-party error says, fit for one line."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[-1][:limit] if lines else '(no message)'}"


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
        raise GraphError(f"{what} failed: {one_line(err)} (the model may use something "
                         "the graph level does not handle yet; --debug shows the traceback)") from err
