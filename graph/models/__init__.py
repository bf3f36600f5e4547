"""Models shipped with the graph level: a CNN trained on scikit-learn's digits, ResNet-18."""
from pathlib import Path

from vta_sim.paths import cache_dir


def models_dir() -> Path:
    """Where built and quantised models are cached: models/ in the cache root, read at the call
    (so $VTA_CACHE set after import is honoured)."""
    return cache_dir("models")
