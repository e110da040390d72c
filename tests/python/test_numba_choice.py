"""fdlink.numba's choice of Numba CUDA target (docs/python.md "numba-cuda or numba-cuda-mlir"):
numba-cuda where installed, else numba-cuda-mlir; FDLINK_NUMBA chooses. No Numba needed."""

import importlib.util

import pytest

import fdlink.numba as fn


def test_a_bad_choice_is_refused(monkeypatch):
    monkeypatch.setenv("FDLINK_NUMBA", "numba-cpu")
    with pytest.raises(ValueError, match="FDLINK_NUMBA='numba-cpu': expected one of numba-cuda, "
                                         "numba-cuda-mlir"):
        fn._cuda()


@pytest.mark.parametrize("name, module", [("numba-cuda", "numba"),
                                          ("numba-cuda-mlir", "numba_cuda_mlir")])
def test_the_chosen_target_is_used_or_named_missing(monkeypatch, name, module):
    monkeypatch.setenv("FDLINK_NUMBA", name)
    if importlib.util.find_spec(module) is None:
        with pytest.raises(ImportError, match=f"needs numba-cuda or numba-cuda-mlir.*{name}:"):
            fn._cuda()
    else:
        assert fn._cuda().__name__ == fn._TARGETS[name]
