"""Errors that travel and say what they mean, paths read by the C library, text of any bytes, and
the GIL released while the library compiles, checks and links (issue 38)."""

import concurrent.futures
import http.server
import multiprocessing
import os
import pickle
import threading

import pytest

import _workers
import fdlink
from conftest import MUL_CU, MUL_DECL

BAD_DECL = "mul_f32_f32 float32(float32, float32)\n"
STATUS_RECORD = {"code": -14, "status": "FDL_EDEVICE", "backend_code": 3, "source": "",
                 "line": 0, "column": 0, "symbol": "mul_f32_f32",
                 "message": "returned status 3 at index 17 (first of 4 failures)",
                 "formatted": "mul_f32_f32: returned status 3 at index 17 (first of 4 failures)",
                 "log": None, "diagnostics": None, "index": 17, "count": 4}


def _same(a, b):
    assert type(a) is type(b)
    assert str(a) == str(b)
    for f in ("code", "status", "backend_code", "source", "line", "column", "symbol", "message",
              "log", "diagnostics", "record"):
        assert getattr(a, f) == getattr(b, f), f


# ---- pickling --------------------------------------------------------------------------------


def test_every_error_pickles_with_its_record():
    with pytest.raises(fdlink.ParseError) as info:
        fdlink.Library(BAD_DECL, [], arch="sm_90")
    e = info.value
    assert e.line == 1 and e.column > 0
    _same(e, pickle.loads(pickle.dumps(e)))
    ds = fdlink.DeviceStatusError(STATUS_RECORD)
    d2 = pickle.loads(pickle.dumps(ds))
    _same(ds, d2)
    assert (d2.index, d2.count, d2.device_status, d2.function) == (17, 4, 3, "mul_f32_f32")
    abi = fdlink.ABIError({"code": -5, "message": "f: wrong (ABI-5; declared at w.decl:1:1)",
                           "rule": 5, "decl_source": "w.decl", "decl_line": 1, "decl_column": 1})
    a2 = pickle.loads(pickle.dumps(abi))
    assert (a2.rule, a2.declaration) == ("ABI-5", "w.decl:1:1")
    plain = fdlink.Error("a message")  # made from a str, as any exception
    assert str(pickle.loads(pickle.dumps(plain))) == "a message"
    e.note = "added later"
    assert pickle.loads(pickle.dumps(e)).note == "added later"


def test_a_pool_receives_a_workers_error():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        r = pool.apply_async(_workers.bad_declarations, (BAD_DECL,))
        with pytest.raises(fdlink.ParseError) as info:
            r.get(timeout=300)  # before the fix, the pool's result thread died: no answer
        r2 = pool.apply_async(_workers.device_status, (STATUS_RECORD,))
        with pytest.raises(fdlink.DeviceStatusError) as info2:
            r2.get(timeout=300)
    assert info.value.line == 1 and info.value.status == "FDL_EPARSE"
    assert info2.value.index == 17 and info2.value.device_status == 3


def test_a_process_pool_executor_receives_a_workers_error():
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        f = ex.submit(_workers.bad_declarations, BAD_DECL)
        with pytest.raises(fdlink.ParseError) as info:
            f.result(timeout=300)  # not BrokenProcessPool
    assert info.value.line == 1 and info.value.source == "<declarations>"


# ---- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path, what", [("/dev/zero", "character device"),
                                        ("/tmp", "directory")])
def test_declaration_paths_read_by_the_library(path, what):
    with pytest.raises(fdlink.FileError, match=what) as info:
        fdlink.Library(path, [], arch="sm_90")
    assert info.value.source == path


def test_a_fifo_declaration_path_refused_at_once(tmp_path):
    fifo = tmp_path / "decls.decl"
    os.mkfifo(fifo)
    with pytest.raises(fdlink.FileError, match="FIFO"):
        fdlink.Library(fifo, [], arch="sm_90")  # no writer: a read would wait for ever


def test_a_str_where_the_sources_go_refused():
    with pytest.raises(TypeError, match=r"list of sources.*Library\(decls, \['mul.cu'\]\)") as i:
        fdlink.Library(MUL_DECL, "mul.cu", arch="sm_90")
    assert isinstance(i.value, fdlink.Error) and i.value.symbol == "sources"
    with pytest.raises(fdlink.ArgumentTypeError):
        fdlink.Library(MUL_DECL, MUL_CU.encode(), arch="sm_90")


def test_non_utf8_paths(tmp_path):
    raw = os.fsencode(tmp_path) + b"/m\xe9\xff"
    decl, cu = os.fsdecode(raw + b".decl"), os.fsdecode(raw + b".cu")
    with open(decl, "w") as f:
        f.write(MUL_DECL)
    with open(cu, "w") as f:
        f.write(MUL_CU)
    lib = fdlink.Library(decl, [fdlink.Source(path=cu)], arch="sm_90")
    assert os.fsencode(lib.declarations[0].source) == raw + b".decl"
    fdlink.Library(decl, [fdlink.Source(path=os.fsencode(cu))], arch="sm_90")
    with pytest.raises(fdlink.FileError) as info:  # an error naming such a path
        fdlink.Library(MUL_DECL, [fdlink.Source(path=cu + "-missing")], arch="sm_90")
    assert os.fsencode(info.value.source) == raw + b".cu-missing"
    str(info.value).encode()  # printable


# ---- text --------------------------------------------------------------------------------------


def test_a_non_utf8_compiler_log_keeps_the_parse_error():
    src = fdlink.Source(b"#error bad \xe9\x80\xc3( bytes\n", kind="cuda", name="bad.cu")
    with pytest.raises(fdlink.ParseError) as info:
        fdlink.Library(MUL_DECL, [src], arch="sm_90")
    e = info.value
    assert (e.source, e.line) == ("bad.cu", 1)
    assert b"\xe9\x80\xc3(" in e.record["log_bytes"]
    assert "\\xe9\\x80\\xc3(" in e.log  # as text that prints
    e.log.encode()
    str(e).encode()


# ---- messages ----------------------------------------------------------------------------------


def test_bad_arguments_are_fdlink_errors_naming_them():
    with pytest.raises(fdlink.InvalidArgumentError, match="dtype: 'float128' is not an element"):
        fdlink.empty(4, "float128")
    with pytest.raises(ValueError, match=r"option opt_level: 1099511627776 is out of range"):
        fdlink.Library(MUL_DECL, [MUL_CU], arch="sm_90", opt_level=2**40)
    with pytest.raises(fdlink.ArgumentTypeError, match="option opt_level: must be an int"):
        fdlink.Library(MUL_DECL, [MUL_CU], arch="sm_90", opt_level="3")
    with pytest.raises(fdlink.InvalidArgumentError, match="shape"):
        fdlink.empty(-1)
    with pytest.raises(fdlink.ArgumentTypeError, match="shape"):
        fdlink.empty(2.5)


@pytest.mark.mock
def test_launch_options_named(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    y = fdlink.empty(8, "f4")
    with pytest.raises(fdlink.InvalidArgumentError, match="shared_mem: must be an int from 0"):
        k[1, 8, None, -1](y, y, 1.0, 8)
    with pytest.raises(fdlink.InvalidArgumentError, match="shared_mem"):
        k.launch(1, 8, y, y, 1.0, 8, shared_mem=-1)
    with pytest.raises(fdlink.InvalidArgumentError, match="shared_mem"):
        k.prepare(1, 8, (y, y, 1.0, 8), shared_mem=-1)
    with pytest.raises(fdlink.ArgumentTypeError, match="shared_mem"):
        k.launch(1, 8, y, y, 1.0, 8, shared_mem=1.5)
    with pytest.raises(fdlink.InvalidArgumentError, match="set_max_dynamic_shared: nbytes"):
        k.set_max_dynamic_shared(-1)
    with pytest.raises(fdlink.ArgumentTypeError, match="cooperative: must be True, False or None"):
        k[1, 8](y, y, 1.0, 8, cooperative=1)
    with pytest.raises(fdlink.ArgumentTypeError, match="cooperative"):
        k.prepare(1, 8, (y, y, 1.0, 8), cooperative="yes")


@pytest.mark.mock
def test_map_n_named(mul_lib):
    m = mul_lib.map("mul_f32_f32")
    a = fdlink.empty(4, "f4")
    with pytest.raises(fdlink.InvalidArgumentError, match="n: must be an int from 0"):
        m(a, a, a, n=-1)


def test_arch_needed_without_a_gpu(monkeypatch):
    from fdlink import _library

    def no_device(*a, **k):
        raise fdlink.NoDeviceError({"code": -8, "message": "no CUDA device"})

    monkeypatch.setattr(_library, "device", no_device)
    with pytest.raises(fdlink.InvalidArgumentError, match="arch: is needed without a GPU") as i:
        fdlink.Library(MUL_DECL, [MUL_CU])
    assert isinstance(i.value, ValueError)


# ---- the GIL -----------------------------------------------------------------------------------


class _Remote(http.server.BaseHTTPRequestHandler):
    """An HTTP cache remote (GET and PUT) served by a Python thread of this process: it can only
    answer while the library runs without the GIL."""

    calls = None  # set per server: [(method, in_call)]
    state = None

    def _note(self, method):
        self.server.calls.append((method, self.server.state["in_call"]))

    def do_GET(self):
        self._note("GET")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._note("PUT")
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("what", ["check", "link", "compile"])
def test_the_gil_is_released_while_the_library_works(tmp_path, what):
    """The library asks an HTTP cache remote served by a Python thread of this process; every
    request is answered while the call runs (the library waits up to 60 s for each, so a GIL
    held across a request shows as a failed request, whatever the machine's speed)."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Remote)
    srv.calls, srv.state = [], {"in_call": False}
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    url = (f"http://127.0.0.1:{srv.server_address[1]}/c|connect-timeout=60000"
           "|operation-timeout=60000")
    cu = MUL_CU.replace("a * b", "a * b + 0.5f")  # a source no other test compiled
    opts = dict(arch="sm_90", cache_remote=url, cache_dir=str(tmp_path))
    try:
        srv.state["in_call"] = True
        if what == "check":
            info = fdlink.Library(MUL_DECL, [cu], **opts)._check.info
        elif what == "link":
            info = fdlink.link(cu, decls=MUL_DECL, **opts).info
        else:
            fdlink.compile(cu, decls=MUL_DECL, **opts)
            info = {"cache_warning": ""}
        srv.state["in_call"] = False
    finally:
        srv.shutdown()
        srv.server_close()
    warning = info.get("cache_warning") or ""
    if "libcurl" in warning:
        pytest.skip(f"no libcurl for HTTP remotes: {warning}")
    assert not warning, warning
    assert srv.calls and all(in_call for _, in_call in srv.calls), srv.calls
