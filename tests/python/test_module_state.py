"""The extension's module state (python/src/py_fdlink.h): multi-phase initialisation with the
state in the module object, one instance per process (a second one refused at its exec)."""

import gc
import importlib
import importlib.util

import pytest

import fdlink
from fdlink import _fdlink


def _still_works():
    # the first instance's state: its types, its interned names, its error factory
    assert _fdlink.status_name(-1).startswith("FDL_E")
    with pytest.raises(fdlink.Error):
        _fdlink.kind_parse("no-such-kind")


def test_second_instance_refused():
    spec = importlib.util.find_spec("fdlink._fdlink")
    second = importlib.util.module_from_spec(spec)
    assert second is not _fdlink
    with pytest.raises(ImportError, match="already loaded in this process"):
        spec.loader.exec_module(second)
    del second
    gc.collect()
    _still_works()


def test_reload_keeps_the_module():
    assert importlib.reload(_fdlink) is _fdlink
    _still_works()


def test_types_belong_to_the_module():
    for name in ("Decls", "Link", "Device", "Module", "Kernel", "Launch", "Buffer", "Stream",
                 "Gen", "Map", "Reduction", "Configured", "_DLHold"):
        t = getattr(_fdlink, name)
        assert t.__module__ == "fdlink._fdlink", name
