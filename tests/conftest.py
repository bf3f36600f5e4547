import pytest

from vta_sim import Config

CONFIGS = ("1x8x8", "8x8x8")


@pytest.fixture(params=CONFIGS)
def cfg(request):
    return Config.load(request.param)
