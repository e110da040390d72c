"""Errors carry their structure as fields of the C record (fdl_error's details, error.h's
FDL_ERROR_HAS_*), never read back out of the message: the ABI rule and the declaration's place,
the library, a map's index, the failure count (a kernel's block and thread: test_launch's
test_device_status_error); and the class comes from the status name. Each is checked on a real
error of the library (the device statuses through the mock driver), and after a pickle round
trip."""

import os
import pickle
import subprocess
import sys

import pytest

import fdlink
from conftest import DATA, MUL_CU
from fakes import floats, put
from fdlink._errors import from_record


def _round_trip(e):
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is type(e) and str(e2) == str(e) and e2.record == e.record
    return e2


def test_abi_error_carries_rule_and_declaration(arch):
    with pytest.raises(fdlink.ABIError) as info:
        fdlink.Library(DATA / "link" / "mul.decl", [DATA / "link" / "mul_wide.ptx"], arch=arch)
    e = info.value
    decl = str(DATA / "link" / "mul.decl")
    assert (e.record["rule"], e.record["decl_source"], e.record["decl_line"],
            e.record["decl_column"]) == (5, decl, 2, 1)
    assert (e.rule, e.declaration) == ("ABI-5", f"{decl}:2:1")
    assert (e.declaration_source, e.declaration_line, e.declaration_column) == (decl, 2, 1)
    e2 = _round_trip(e)
    assert (e2.rule, e2.declaration, e2.declaration_line) == ("ABI-5", f"{decl}:2:1", 2)
    # no device-status or library detail in an ABI error's record
    assert not {"index", "block", "thread", "count", "library"} & set(e.record)


def test_a_declaration_named_with_spaces_and_parentheses(arch):
    # a name the message's words cannot delimit: the field has it whole
    decl = "# widths\nmul_f32_f32: float64(float64, float64)\n"
    with pytest.raises(fdlink.ABIError) as info:
        fdlink.Library(decl, [fdlink.Source(MUL_CU, name="mul.cu")], arch=arch,
                       name="my decls (v2).decl")
    e = info.value
    assert e.message.endswith("(ABI-5; declared at my decls (v2).decl:2:1)")
    assert (e.rule, e.declaration) == ("ABI-5", "my decls (v2).decl:2:1")
    assert e.declaration_source == "my decls (v2).decl"


def test_the_class_comes_from_the_status_name():
    # keyed on the name fdl_status_name gives, not on the number
    for status, cls in [("FDL_EABI", fdlink.ABIError), ("FDL_EDEVICE", fdlink.DeviceStatusError),
                        ("FDL_ENOLIB", fdlink.LibraryNotFoundError),
                        ("FDL_EINVAL", fdlink.InvalidArgumentError), ("FDL_E?", fdlink.Error)]:
        assert type(from_record({"status": status, "message": "m"})) is cls, status
    # an attribute is the record's field whatever the message says
    e = from_record({"status": "FDL_EABI", "message": "f: see ABI-7 (declared at x.decl:9:9)"})
    assert (e.rule, e.declaration) == (None, None)
    e = from_record({"status": "FDL_EDEVICE", "message": "returned status 3 at index 17"})
    assert (e.index, e.block, e.thread, e.count) == (None, None, None, 1)


def test_missing_library_is_carried(tmp_path):
    missing = str(tmp_path / "libnvJitLink.so.13")
    code = ("import fdlink, pickle, sys\n"
            "try:\n"
            "    fdlink.link(b'.version 8.0\\n.target sm_90\\n.address_size 64\\n', arch='sm_90')\n"
            "except fdlink.LibraryNotFoundError as e:\n"
            "    e2 = pickle.loads(pickle.dumps(e))\n"
            "    print(repr((e.record.get('library'), e.library, e2.library)))\n")
    env = dict(os.environ, FDLINK_NVJITLINK=missing)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr((missing, missing, missing)), out.stdout + out.stderr


@pytest.mark.mock
def test_map_status_carries_index_and_count(arch):
    lib = fdlink.Library(DATA / "run" / "safe_sqrt.decl", [DATA / "run" / "safe_sqrt.cu"],
                         arch=arch)
    m = lib.map("safe_sqrt")
    x, out = fdlink.empty(100, "f4"), fdlink.empty(100, "f4")
    vals = [float(i) for i in range(100)]
    vals[61], vals[37] = -1.0, -4.0
    put(x, vals)
    with pytest.raises(fdlink.DeviceStatusError) as info:
        m(out, x)
    e = info.value
    assert e.message.endswith("at index 37 in map 'safe_sqrt' (first of 2 failures)")
    assert (e.index, e.count, e.block, e.thread) == (37, 2, None, None)
    assert (e.record["index"], e.record["count"]) == (37, 2)
    e2 = _round_trip(e)
    assert (e2.index, e2.count, e2.function, e2.device_status) == (37, 2, "safe_sqrt", 1)
    vals[61] = 61.0
    put(x, vals)
    with pytest.raises(fdlink.DeviceStatusError) as info:
        m(out, x)
    assert (info.value.index, info.value.count) == (37, 1)
    vals[37] = 37.0
    put(x, vals)
    m(out, x)
    got = floats(out)
    assert [got[i * i] for i in range(10)] == [float(i) for i in range(10)]
