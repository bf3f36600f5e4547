"""The Dask client every sweep and tuning run uses: a LocalCluster by default, or a real cluster.

Local workers are processes with one thread each: TVM compilation and the simulator are
CPU-bound Python, so threads would only contend for the GIL.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from distributed import Client, LocalCluster


@contextmanager
def connect(scheduler: str | None = None, workers: int | None = None):
    """A Client on `scheduler` (e.g. tcp://host:8786), else on a new LocalCluster of `workers`
    processes (default: one per core), closed on exit."""
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    n = workers or os.cpu_count() or 1
    # The dashboard on any free port, so that sweeps side by side on one machine do not clash.
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        yield client
