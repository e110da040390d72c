"""Generated kernels: maps over declared functions (through the mock driver, which runs the map
of mul_f32_f32 with a broadcast scalar), and their argument checks."""

import pytest

import fdlink
from fakes import cai_of, floats, put

pytestmark = pytest.mark.mock


@pytest.fixture(scope="module")
def m(mul_lib):
    return mul_lib.map("mul_f32_f32")


def test_map_scalar_broadcast(m):
    a, out = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    put(a, list(range(8)))
    assert m(out, a, 3.0) is out
    assert floats(out) == [3.0 * i for i in range(8)]
    m(cai_of(out), a, 0.5, stream=fdlink.stream())  # queued in a stream, then checked
    assert floats(out) == [0.5 * i for i in range(8)]
    m(out, a, 2.0, sync=False)
    m.check()
    assert floats(out) == [2.0 * i for i in range(8)]
    assert "mul_f32_f32" in m.source("as")


def test_map_checks(m):
    a, out = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    with pytest.raises(TypeError, match="takes 3 arguments"):
        m(out, a)
    with pytest.raises(TypeError, match="has elements of type i4, but f4 was declared"):
        m(out, fdlink.empty(8, "i4"), 3.0)
    short = fdlink.empty(4, "f4")
    with pytest.raises(fdlink.InvalidArgumentError, match="n is 8"):
        m(out, short, 3.0)
    with pytest.raises(TypeError, match="cannot be packed"):
        m(out, a, "three")


def test_map_of_unknown_function(mul_lib):
    with pytest.raises(KeyError):
        mul_lib.map("nope")
