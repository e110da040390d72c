"""What needs no driver: declarations, headers, links (nvJitLink/NVRTC), errors as records."""

import os
import subprocess
import sys

import pytest

import fdlink
import fdlink._cli
from conftest import DATA, MUL_CU, MUL_DECL, SAXPY_CU


def test_version_and_kinds():
    assert fdlink.__version__.count(".") == 2
    assert "ltoir" in fdlink.KINDS
    assert fdlink._fdlink.status_name(-5) == "FDL_EABI"


def test_declarations_and_header():
    lib = fdlink.Library(MUL_DECL + "add_c: uint32(uint32, uint32) abi=c\n", check=False)
    d = lib.declarations
    assert [x.name for x in d] == ["mul_f32_f32", "add_c"]
    assert d[0].signature == "float32(float32, float32)"
    assert d[0].param_types == ("float32", "float32") and d[1].abi == "c"
    assert (d[1].line, d[1].column) == (2, 1)
    h = lib.header("MY_GUARD")
    assert "#ifndef MY_GUARD" in h and "mul_f32_f32" in h


def test_declarations_from_file():
    lib = fdlink.Library(DATA / "link" / "mul.decl", check=False)
    assert lib.declarations[0].source.endswith("mul.decl")
    lib2 = fdlink.Library(str(DATA / "link" / "mul.decl"), check=False)
    assert lib2.declarations[0].name == "mul_f32_f32"


def test_parse_error_carries_the_record():
    with pytest.raises(fdlink.ParseError) as e:
        fdlink.Library("ok_one: float32(float32)\nbad: float32(float99)\n", name="x.decl",
                       check=False)
    err = e.value
    assert err.status == "FDL_EPARSE" and err.code == -4
    assert err.source == "x.decl" and err.line == 2 and err.column > 0
    assert str(err).startswith("x.decl:2:")
    assert isinstance(err, fdlink.Error)


def test_missing_decl_file():
    with pytest.raises(fdlink.FileError) as e:
        fdlink.Library("/nonexistent/f.decl", check=False)
    assert "/nonexistent/f.decl" in str(e.value)


def test_library_checks_and_links(arch):
    lib = fdlink.Library(MUL_DECL, [MUL_CU], arch=arch)
    mod = lib.link(SAXPY_CU)
    assert mod.cubin[:4] == b"\x7fELF"
    assert mod.info["arch"] == arch
    assert mod.info["cache"] in ("miss", "memory", "disk")
    again = lib.link(SAXPY_CU)
    assert again.info["cache"] in ("memory", "disk")
    assert again.cubin == mod.cubin


def test_abi_error_names_file_line_symbol(arch):
    with pytest.raises(fdlink.ABIError) as e:
        fdlink.Library(DATA / "link" / "mul.decl", [DATA / "link" / "mul_wide.ptx"], arch=arch)
    err = e.value
    assert err.status == "FDL_EABI"
    assert err.source.endswith("mul_wide.ptx") and err.line > 0
    assert err.symbol == "mul_f32_f32"
    assert err.rule is not None and err.rule.startswith("ABI-")
    assert err.declaration is not None and err.declaration.endswith("mul.decl:2:1")
    assert any(d["tool"] == "fdlink" and d["code"] == err.rule and d["severity"] == "error"
               for d in err.diagnostics)
    assert err.message in str(err)


def test_cuda_c_that_disagrees_does_not_compile(arch):
    bad = 'extern "C" __device__ int mul_f32_f32(double *r, double a, double b) { return 0; }'
    with pytest.raises(fdlink.ABIError) as e:  # the ABI error it is (issue 38)
        fdlink.Library(MUL_DECL, [bad], arch=arch)
    assert e.value.rule == "ABI-5"
    assert e.value.log  # NVRTC's whole log
    assert any(d["tool"] == "nvrtc" and d["severity"] == "error"
               for d in e.value.diagnostics)


def test_link_error_has_diagnostics(arch):
    lib = fdlink.Library(MUL_DECL, [MUL_CU], arch=arch)
    caller = ('extern "C" __device__ int nowhere(float *, float);\n'
              'extern "C" __global__ void k(float *y) { float r; nowhere(&r, 1.0f); y[0] = r; }')
    with pytest.raises(fdlink.LinkError) as e:
        lib.link(caller)
    assert "nowhere" in str(e.value)
    assert isinstance(e.value.diagnostics, list)


def test_link_of_ptx_bytes_and_kind_refusal(arch):
    ptx = (DATA / "link" / "mul.ptx").read_bytes()
    mod = fdlink.link(ptx, DATA / "link" / "caller.ptx", decls=DATA / "link" / "mul.decl",
                      arch=arch)
    assert mod.cubin[:4] == b"\x7fELF"
    with pytest.raises(fdlink.KindError):
        fdlink.link((DATA / "link" / "logo.png").read_bytes(), arch=arch)


def test_compile_to_checked_ltoir_and_ptx(arch):
    ir = fdlink.compile(MUL_CU, decls=MUL_DECL, arch=arch, output="ltoir")
    assert ir.kind == "ltoir" and ir.data[:4] == bytes.fromhex("ed434e7f")
    ptx = fdlink.compile(MUL_CU, decls=MUL_DECL, arch=arch, output="ptx")
    assert ptx.kind == "ptx" and b".visible .func" in ptx.data
    # either links with a caller, as any input does
    mod = fdlink.Library(MUL_DECL, [ir], arch=arch).link(SAXPY_CU)
    assert mod.cubin[:4] == b"\x7fELF"
    bad = 'extern "C" __device__ int mul_f32_f32(float *r, double a, float b) { return 0; }'
    with pytest.raises(fdlink.ABIError) as e:
        fdlink.compile(bad, decls=MUL_DECL, arch=arch, name="bad.cu")
    assert e.value.source == "bad.cu" and e.value.line == 1 and e.value.log
    assert e.value.rule == "ABI-5"


def test_cuda_c_that_disagrees_with_its_declaration_is_an_abi_error(arch):
    # NVRTC refuses the definition (the declarations' prototypes are pre-included); fdlink says
    # it as the ABI error it is: both signatures, the rule, the declaration (issue 38)
    decl = "# widths\nmul_f32_f32: float64(float64, float64)\n"
    want = ("mul.cu:1:27: mul_f32_f32: defined as (float *, float, float), declared "
            "float64(float64, float64) (ABI-5; declared at wide.decl:2:1)")
    with pytest.raises(fdlink.ABIError) as e:
        fdlink.Library(decl, [fdlink.Source(MUL_CU, name="mul.cu")], arch=arch,
                       name="wide.decl")
    err = e.value
    assert str(err) == want
    assert (err.rule, err.declaration, err.symbol) == ("ABI-5", "wide.decl:2:1", "mul_f32_f32")
    assert (err.source, err.line, err.column, err.status) == ("mul.cu", 1, 27, "FDL_EABI")
    # NVRTC's own words stay: in the log and as its record beside fdlink's
    assert 'has "C" linkage' in err.log
    tools = [(d["tool"], d["code"]) for d in err.diagnostics]
    assert ("fdlink", "ABI-5") in tools and ("nvrtc", "") in tools
    with pytest.raises(fdlink.ABIError) as e:
        fdlink.compile(MUL_CU, decls=decl, arch=arch, name="mul.cu")
    assert e.value.rule == "ABI-5" and "defined as (float *, float, float)" in str(e.value)
    # a status return that is not an int: ABI-2, with the type as written
    ret = MUL_CU.replace("__device__ int", "__device__ float")
    with pytest.raises(fdlink.ABIError) as e:
        fdlink.compile(ret, decls=MUL_DECL, arch=arch, name="ret.cu")
    assert e.value.rule == "ABI-2" and "defined as float (float *, float, float)" in str(e.value)


def test_library_check_without_link(arch):
    # a declared function that no source defines is an error of the check
    with pytest.raises(fdlink.ABIError, match="declared but not defined"):
        fdlink.Library(MUL_DECL + "other: int32(int32)\n", [MUL_CU], arch=arch)


def test_link_options_reach_the_linker(arch):
    ir = fdlink.compile(MUL_CU, decls=MUL_DECL, arch=arch, output="ltoir")
    lib = fdlink.Library(MUL_DECL, [ir], arch=arch)
    caller = fdlink.compile(SAXPY_CU, decls=MUL_DECL, arch=arch, output="ltoir",
                            name="caller.cu")
    mod = lib.link(caller, emit_ptx=True, kernels_used=["saxpy"], opt_level=3,
                   defines={"UNUSED": 1}, xptxas=("-O3",))
    assert mod.ptx is not None and ".entry saxpy" in mod.ptx
    assert mod.info["lto"] == 1


def test_version_5_link_options_reach_fdlink(arch):
    # cache_lease_ms, jobs and lto_report (fdl_link_options version 5): fdlink checks the first
    # two (a value it refuses names the field), the third adds one note per declared function
    for bad, field in (({"cache_lease_ms": -5}, "cache_lease_ms"), ({"jobs": 5000}, "jobs")):
        with pytest.raises(fdlink.InvalidArgumentError, match=field):
            fdlink.link(MUL_CU, arch=arch, **bad)
    with pytest.raises(TypeError, match="cache_lease_ms"):
        fdlink.link(MUL_CU, arch=arch, cache_lease_ms="soon")
    ir = fdlink.compile(MUL_CU, decls=MUL_DECL, arch=arch, output="ltoir")
    lib = fdlink.Library(MUL_DECL, [ir], arch=arch)
    caller = fdlink.compile(SAXPY_CU, decls=MUL_DECL, arch=arch, output="ltoir",
                            name="caller.cu")
    plain = lib.link(caller, cache=False, jobs=2, cache_lease_ms=0)
    assert not [d for d in plain.diagnostics if d["code"] == "lto-report"]
    mod = lib.link(caller, cache=False, lto_report=True, jobs=2, cache_lease_ms=1000)
    notes = [d for d in mod.diagnostics if d["code"] == "lto-report"]
    assert len(notes) == 1 and "call" in notes[0]["message"], mod.diagnostics


def test_options_checked():
    with pytest.raises(TypeError, match="unknown option"):
        fdlink.Library(MUL_DECL, check=False, colour="blue")
    with pytest.raises(ValueError, match="lto"):
        fdlink.link(MUL_CU, arch="sm_90", lto="sometimes")
    with pytest.raises(fdlink.InvalidArgumentError) as e:
        fdlink.link(MUL_CU, arch="sm_1")
    assert isinstance(e.value, ValueError) and "sm_1" in str(e.value)


def test_cache_stats_export_import(tmp_path, arch):
    d = tmp_path / "cache"
    lib = fdlink.Library(MUL_DECL, [MUL_CU + f"// {tmp_path}\n"], arch=arch, cache_dir=d,
                         cache="on")
    mod = lib.link(SAXPY_CU)
    assert mod.info["cache"] in ("miss", "memory")  # the same link may be in memory already
    s = fdlink.cache.stats(d)
    assert s["entries"] >= 1
    bundle = tmp_path / "b.fdlc"
    assert fdlink.cache.export(bundle, directory=d) == s["entries"]
    assert fdlink.cache.clear(d) >= 1
    assert fdlink.cache.stats(d)["entries"] == 0
    assert fdlink.cache.import_(bundle, directory=d)["imported"] == s["entries"]
    assert fdlink.cache.stats(d)["entries"] == s["entries"]


def test_missing_linker_is_named(tmp_path):
    code = ("import fdlink, sys\n"
            "try:\n"
            "    fdlink.link(b'.version 8.0\\n.target sm_90\\n.address_size 64\\n', arch='sm_90')\n"
            "except fdlink.LibraryNotFoundError as e:\n"
            "    print('LIB', e.library, '|', e)\n")
    env = dict(os.environ, FDLINK_NVJITLINK=str(tmp_path / "libnvJitLink.so.13"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("LIB "), out.stdout + out.stderr
    assert "libnvJitLink.so.13" in out.stdout


def test_versions_name_nvrtc_and_the_pair():
    # issue 40: NVRTC's version beside nvJitLink's, and "pair" only when NVRTC is the newer
    v = fdlink.versions()
    assert "nvrtc" in v, v
    if v["nvrtc"] and v["nvjitlink"] and tuple(v["nvrtc"]) <= tuple(v["nvjitlink"]):
        assert "pair" not in v, v


def test_versions_say_a_pair_that_disagrees(tmp_path):
    # NVRTC 13.5 (the wheel tests/run.sh installs into <build>/cu135, FDLINK_TEST_CU135) with the
    # toolkit's nvJitLink 13.0: versions() says they disagree and what to do
    lib = os.environ.get("FDLINK_TEST_CU135", "")
    rtc = os.path.join(lib, "nvidia", "cu13", "lib", "libnvrtc.so.13")
    if not lib or not os.path.exists(rtc):
        pytest.skip("no NVRTC 13.5 wheel (FDLINK_TEST_CU135)")
    jl = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64", "libnvJitLink.so.13")
    if not os.path.exists(jl):
        pytest.skip("no toolkit nvJitLink")
    code = "import fdlink; v = fdlink.versions(); print(v['nvrtc'], v['nvjitlink'], v.get('pair'))"
    env = dict(os.environ, FDLINK_NVRTC=rtc, FDLINK_NVJITLINK=jl)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    if "(13, 0)" in out.stdout:
        assert "NVRTC 13.5 and nvJitLink 13.0 disagree" in out.stdout, out.stdout


def test_doctor_is_data():
    if not os.path.exists(fdlink._cli.executable()):
        pytest.skip("the CLI is not installed beside the package (build-tree run)")
    d = fdlink.doctor()
    assert isinstance(d, dict) and d


def test_console_script_runs_the_cli():
    if not os.path.exists(fdlink._cli.executable()):
        pytest.skip("the CLI is not installed beside the package (build-tree run)")
    out = subprocess.run([sys.executable, "-c", "import fdlink._cli as c; c.main(['--version'])"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and fdlink.__version__ in out.stdout + out.stderr


def test_generated_kernels_compile_without_a_device(mul_lib):
    # the generator without a device generates, compiles and links (launches need one): the
    # sources and cubins of a map, an elementwise kernel and a reduction
    gen = mul_lib._gen(None)
    m = gen.map("mul_f32_f32", "as")
    assert "mul_f32_f32" in m.source and m.cubin[:4] == b"\x7fELF"
    e = gen.elementwise("float a, const float *x, float *y",
                        "float r; FDL_MAP_CALL(mul_f32_f32, &r, a, x[i]); y[i] = r + y[i]")
    assert e.cubin[:4] == b"\x7fELF"
    r = gen.reduction("float64", "const float *x", "(double)x[i] * x[i]", "sum")
    assert r.result_size == 8 and r.cubin[:4] == b"\x7fELF"
    with pytest.raises(fdlink.ParseError) as err:
        gen.elementwise("float *y", "y[i] = undefined_thing;")
    assert err.value.log
    # C's spellings that the generated kernels refused or the package did not know before
    # (plain char, int as `signed`, specifiers in any order, ptrdiff_t) compile, and the Python
    # side packs and checks them as the C side declared them
    e = gen.elementwise("char *s, short int a, long unsigned int b, signed c, ptrdiff_t d",
                        "s[i] = (char)(a + b + c + d)")
    assert e.cubin[:4] == b"\x7fELF" and "signed char *s" in e.source
    ew = fdlink.Elementwise(e, "char *s, short int a, long unsigned int b, signed c, ptrdiff_t d",
                            None)
    assert ew._types == ["*i1", "i2", "u8", "i4", "i8"]


def test_cu13_libraries_found_through_pathfinder(tmp_path):
    # the cu13 extra's lookup: cuda.pathfinder's answer handed to libfdlink by variable; a
    # library it cannot find is left to libfdlink's own search (and named if missing there)
    fake = tmp_path / "cuda"
    (fake / "pathfinder").mkdir(parents=True)
    (fake / "pathfinder" / "__init__.py").write_text(
        "class Loaded:\n"
        "    def __init__(self, p): self.abs_path = p\n"
        "def load_nvidia_dynamic_lib(name):\n"
        "    if name == 'nvJitLink': return Loaded('/opt/wheels/libnvJitLink.so.13')\n"
        "    raise RuntimeError('not found: ' + name)\n")
    # as on a machine without a toolkit: libfdlink's own search would find neither library
    code = ("import os, fdlink._libs as l; l._findable = lambda names: False; l.ensure(); "
            "print(os.environ.get('FDLINK_NVJITLINK'), os.environ.get('FDLINK_NVRTC'), "
            "l.found['nvJitLink'], l.found['nvrtc'])")
    env = {k: v for k, v in os.environ.items() if k not in ("FDLINK_NVJITLINK", "FDLINK_NVRTC")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + sys.path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["/opt/wheels/libnvJitLink.so.13", "None",
                                  "/opt/wheels/libnvJitLink.so.13", "None"]
    env["FDLINK_NVJITLINK"] = "/mine/libnvJitLink.so"  # a variable set by the user wins
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split()[0] == "/mine/libnvJitLink.so"


def test_pathfinder_not_asked_for_libraries_found_without_it(tmp_path):
    # cuda.pathfinder loads what it finds: a library that libfdlink's own search finds is left to
    # libfdlink, so that a process whose links are cache hits never loads nvJitLink or NVRTC
    fake = tmp_path / "cuda"
    (fake / "pathfinder").mkdir(parents=True)
    (fake / "pathfinder" / "__init__.py").write_text(
        "def load_nvidia_dynamic_lib(name):\n"
        "    raise AssertionError('pathfinder asked for ' + name)\n")
    libdir = tmp_path / "lib"
    libdir.mkdir()
    for n in ("libnvJitLink.so.13", "libnvrtc.so.13"):
        (libdir / n).write_bytes(b"")
    code = ("import os, fdlink._libs as l; l.ensure(); "
            "print(os.environ.get('FDLINK_NVJITLINK'), os.environ.get('FDLINK_NVRTC'), "
            "l.found['nvJitLink'], l.found['nvrtc'])")
    env = {k: v for k, v in os.environ.items() if k not in ("FDLINK_NVJITLINK", "FDLINK_NVRTC")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + sys.path)
    env["LD_LIBRARY_PATH"] = str(libdir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "None", "None", "None"]


@pytest.mark.parametrize("sig,types", [
    ("void(float32[:], float32, int32)", ("*f4", "f4", "i4")),
    ("float *y, const float *x, float a, int n", ("*f4", "*f4", "f4", "i4")),
    ("unsigned int n, long long m, double *d", ("u4", "i8", "*f8")),
    ("CPointer(float64), uint8, bool", ("*f8", "u1", "b1")),
    (["float32[::1]", "int64", "voidptr"], ("*f4", "i8", None)),
    ("float **pp, __half h", (None, "f2")),
    ("char *s, short int a, long long int b, signed c, ptrdiff_t d, uintptr_t e",
     ("*i1", "i2", "i8", "i4", "i8", "u8")),
    ("int const *p, unsigned long int n, CPointer(float) q", ("*i4", "u8", "*f4")),
])
def test_kernel_signatures(sig, types):
    from fdlink._types import _parse_types

    assert _parse_types(sig) == types


def test_kernel_signature_unknown_type():
    from fdlink._types import _parse_types

    with pytest.raises(ValueError, match="unknown type 'float99'"):
        _parse_types("float99 x")


# The Python package's own table of type spellings before it asked the C library (fdlink
# 0.1's _core._TYPECODES): every spelling it took must keep its meaning.
_OLD_TYPECODES = {
    "bool": "b1", "boolean": "b1", "bool_": "b1",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "intp": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8", "uintp": "u8",
    "float16": "f2", "float32": "f4", "float64": "f8",
    "char": "i1", "signed char": "i1", "unsigned char": "u1", "short": "i2",
    "unsigned short": "u2", "int": "i4", "unsigned": "u4", "unsigned int": "u4",
    "long": "i8", "long long": "i8", "unsigned long": "u8", "unsigned long long": "u8",
    "size_t": "u8", "float": "f4", "double": "f8", "__half": "f2", "half": "f2",
    "int8_t": "i1", "int16_t": "i2", "int32_t": "i4", "int64_t": "i8",
    "uint8_t": "u1", "uint16_t": "u2", "uint32_t": "u4", "uint64_t": "u8",
}

# Spellings the C library's generated kernels took and the package did not (and C's integer
# specifiers in any order): one vocabulary now, for kernel signatures, argument lists and dtypes.
_NEW_SPELLINGS = {
    "short int": "i2", "signed short": "i2", "unsigned short int": "u2", "signed": "i4",
    "signed int": "i4", "long int": "i8", "long long int": "i8", "unsigned long long int": "u8",
    "long unsigned int": "u8", "signed long long": "i8", "ptrdiff_t": "i8", "intptr_t": "i8",
    "uintptr_t": "u8", "ssize_t": "i8", "intc": "i4", "longlong": "i8", "ulonglong": "u8",
    "uchar": "u1", "ushort": "u2", "uintc": "u4",
}


@pytest.mark.parametrize("spelling,code", sorted({**_OLD_TYPECODES, **_NEW_SPELLINGS}.items()))
def test_one_type_vocabulary(spelling, code):
    """Each spelling means one type everywhere: a kernel signature (scalar, pointer, named or
    not, Numba's [:]), an elementwise argument list, a torch/jax operator's parameters, and a
    dtype name; and the C library (fdl_gen_parse_type) says the same."""
    from fdlink import _fdlink, _ops
    from fdlink._device import _dtype_code
    from fdlink._types import _arg_list_types, _parse_names, _parse_types

    assert _fdlink.parse_type(spelling) == (code, 0)
    assert _fdlink.parse_type(f"const {spelling} *") == (code, 1)
    assert _parse_types(f"{spelling} a, const {spelling} *b, {spelling}") == (code, "*" + code, code)
    assert _parse_names(f"{spelling} a, const {spelling} *b, {spelling}") == ("a", "b", None)
    assert _parse_types([spelling, f"{spelling}[:]", f"CPointer({spelling})"]) == \
        (code, "*" + code, "*" + code)
    assert _arg_list_types(f"{spelling} a, {spelling} *b") == [code, "*" + code]
    assert _ops.parse_params(f"{spelling} a, {spelling} *b") == [("a", code), ("b", "*" + code)]
    assert _dtype_code(spelling) == ("|" if code[1:] == "1" else "<") + code


def test_type_vocabulary_refusals():
    """What is no type stays refused, with the old ValueError (the C record as its cause)."""
    from fdlink import _fdlink
    from fdlink._types import _parse_types

    for bad in ("float99", "long double", "short long", "unsigned float", "complex64"):
        with pytest.raises(ValueError, match=f"unknown type '{bad}'") as e:
            _parse_types([bad])
        assert isinstance(e.value.__cause__, fdlink.ParseError)
        with pytest.raises(fdlink.ParseError, match="type:1:"):
            _fdlink.parse_type(bad)
        with pytest.raises(fdlink.InvalidArgumentError, match="dtype"):
            fdlink.empty(4, bad)
    with pytest.raises(fdlink.ParseError, match="unexpected byte 0x00"):
        _fdlink.parse_type("int\0")
    with pytest.raises(TypeError):
        _fdlink.parse_type(b"int")
    assert _fdlink.parse_type("void") == (None, 0)
    assert _fdlink.parse_type("voidptr") == (None, 1)
    assert _parse_types("void *p, float **q, CPointer(CPointer(float)) r") == (None, None, None)


def test_value_objects_pickle_under_their_public_names():
    """A Source, Declaration or Param sent to another process (multiprocessing) comes back
    equal, and its pickle names fdlink.<Class> (where users reach it), not the file defining it."""
    import pickle

    src = fdlink.Source(b"\x7fELF", name="f.cubin", kind="cubin")
    decl = fdlink.Library(b"f: float32(float32, int32)", check=False).declarations[0]
    param = fdlink.Param(0, "x", "float", 4, "signature")
    for obj in (src, decl, param):
        data = pickle.dumps(obj)
        assert b"fdlink._" not in data, data
        back = pickle.loads(data)
        assert type(back) is type(obj) and repr(back) == repr(obj)
    assert pickle.loads(pickle.dumps(src)).data == src.data
    for name in ("Declaration", "Elementwise", "FatModule", "Kernel", "Kernels", "Library", "Map",
                 "Module", "Param", "Reduction", "Source"):
        assert getattr(fdlink, name).__module__ == "fdlink"


def test_package_modules_import_only_downwards():
    """python/fdlink's modules in their order, bottom to top (each imports only modules below
    it, at import time or later: no circle), read from the installed package's sources."""
    import ast
    import pathlib

    order = ["_fdlink", "_errors", "_libs", "_cli", "_types", "_device", "_kernel", "_gen",
             "_library", "_cache", "_ops", "__init__", "numba", "torch", "jax"]
    root = pathlib.Path(fdlink.__file__).parent
    seen = set()
    for path in sorted(root.glob("*.py")):
        me = path.stem
        assert me in order, f"{me}.py has no place in the order"
        seen.add(me)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else [a.name for a in node.names]
                for t in targets:
                    assert order.index(t) < order.index(me), f"{me}.py imports {t} (above it)"
    assert {"_types", "_device", "_kernel", "_gen", "_library", "_cache"} <= seen
