"""The differential tool's own checks (tests/python/differential.py, _diffrecord.py): records
compared as promised (the main thread in order, other threads as a multiset, outcomes), and the
recorder's normalising of what differs between two runs of one build. No fdlink call."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import differential  # noqa: E402


def _call(ctx, name, returned, thread="main", **kw):
    return {"ctx": ctx, "thread": thread, "call": name, "args": [kw.get("arg", 1)], "kw": {},
            "returned": returned}


def _write(path, records, outcomes=(("t::a", "passed"),), end=True):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        for t, o in outcomes:
            f.write(json.dumps({"test": t, "when": "call", "outcome": o}) + "\n")
        if end:
            f.write(json.dumps({"session": "end", "exitstatus": 0, "calls": len(records)}) + "\n")
    return str(path)


def test_same_records_compare_equal_and_threads_in_any_order(tmp_path, capsys):
    a = [_call("t::a call", "fdlink.link", {"type": "fdlink.Module"}),
         _call("t::a call", "fdlink.Kernel.launch", None, thread="other", arg=1),
         _call("t::a call", "fdlink.Kernel.launch", None, thread="other", arg=2)]
    b = [a[0], a[2], a[1]]
    rc = differential.compare(_write(tmp_path / "a", a), _write(tmp_path / "b", b), 100)
    out = capsys.readouterr().out
    assert rc == 0
    assert "differential: 3 calls, 0 differ; 1 tests, 0 outcomes differ" in out


def test_a_changed_result_a_missing_call_and_an_outcome_differ(tmp_path, capsys):
    a = [_call("t::a call", "fdlink.device_count", 1),
         _call("t::a call", "fdlink.Library.header", "x"),
         _call("t::a call", "fdlink.versions", {"fdlink": "0.1"})]
    b = [_call("t::a call", "fdlink.device_count", 1),
         _call("t::a call", "fdlink.versions", {"fdlink": "0.2"})]
    rc = differential.compare(_write(tmp_path / "a", a),
                              _write(tmp_path / "b", b, outcomes=(("t::a", "failed"),)), 100)
    out = capsys.readouterr().out
    assert rc == 1
    assert "DIFFERS t::a call: fdlink.Library.header | old: fdlink.Library.header(1) returned " \
           "\"x\" | new: (no call)" in out
    assert 'DIFFERS t::a call: fdlink.versions: .returned.fdlink: old "0.1" | new "0.2"' in out
    assert "DIFFERS outcome t::a: old passed | new failed" in out
    assert "differential: 3 calls, 2 differ; 1 tests, 1 outcomes differ" in out


def test_a_session_that_did_not_end_is_an_error(tmp_path, capsys):
    a = [_call("t::a call", "fdlink.device_count", 1)]
    rc = differential.compare(_write(tmp_path / "a", a), _write(tmp_path / "b", a, end=False), 100)
    out = capsys.readouterr().out
    assert rc == 1 and "ERROR new: the session did not end" in out


def test_recorder_normalises_what_runs_differ_in():
    import _diffrecord as r

    tmp = r._TMP.rstrip("/")
    s = ("object at 0x7f3a2b4c5d60, %s/fdlink-pytest-cache-ab12_x9z/k, wall 12.5 ms, "
         "http://127.0.0.1:38683/c, data 94114942193184, pid 4242" % tmp)
    assert r._norm_str(s) == ("object at 0xADDR, %s/fdlink-pytest-cache-XXXXXXXX/k, wall T ms, "
                              "http://127.0.0.1:PORT/c, data <N>, pid PID" % tmp)
    r._pointers.clear()
    d = r._desc({"data": (94114942193184, False), "shape": (8,), "wall_ms": 3.5,
                 "blob": b"\x00" * 3})
    assert d == {"blob": {"len": 3, "sha": r._hash(b"\x00" * 3), "type": "bytes"},
                 "data": ["<ptr0>", False], "shape": [8], "wall_ms": "T"}
    assert r._desc(94114942193184) == "<ptr0>"  # the same pointer met again
    r._pointers.clear()


@pytest.mark.parametrize("name,internal", [("fdlink._core", "fdlink"), ("fdlink._kernel", "fdlink"),
                                           ("fdlink.numba", "fdlink.numba"),
                                           ("fdlink._fdlink", "fdlink._fdlink")])
def test_recorder_names_by_public_module(name, internal):
    import _diffrecord as r

    assert r._public_prefix(name) == internal


def test_an_exception_field_added_is_listed_one_dropped_differs(tmp_path, capsys):
    def raised(**fields):
        e = {"exception": "fdlink.ABIError", "str": "x.cu: f: ABI-5 ...", "code": -5}
        e.update(fields)
        return {"ctx": "t::a call", "thread": "main", "call": "fdlink.Library", "args": [],
                "kw": {}, "raised": e}

    a = [raised(), raised(rule="ABI-5")]
    b = [raised(index=3), raised(rule="ABI-5", index=3)]
    rc = differential.compare(_write(tmp_path / "a", a), _write(tmp_path / "b", b), 100)
    out = capsys.readouterr().out
    assert rc == 0 and "ADDED fdlink.ABIError: index" in out
    rc = differential.compare(_write(tmp_path / "a", a), _write(tmp_path / "b", [a[0], a[0]]), 100)
    out = capsys.readouterr().out
    assert rc == 1 and '.raised.rule: old "ABI-5" | new "(none)"' in out
