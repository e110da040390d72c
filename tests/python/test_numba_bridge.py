"""The Numba bridge (fdlink.numba, docs/python.md "Numba"): descriptors from checked code, the
refusals before Numba links, Numba's LTO-IR checked against abi=c declarations; on a GPU the
kernels' results against NumPy and fdlink's own map, and no call left in the SASS.

Marked numba (skipped without numba-cuda); the ones that launch also gpu.
"""

import os
import re
import shutil

import pytest

import fdlink
from conftest import DATA, MUL_CU, MUL_DECL

pytestmark = pytest.mark.numba

BOTH_DECL = MUL_DECL + "add_c: float32(float32, float32) abi=c\n"
BOTH_CU = MUL_CU + 'extern "C" __device__ float add_c(float a, float b) { return a + b; }\n'


def _bridge():
    import fdlink.numba as fn
    return fn


def _compiles():
    """numba-cuda compiles without a driver; numba-cuda-mlir 0.6 asks for one (a skip here)."""
    from conftest import REAL_GPU
    if _bridge()._cuda().__name__.startswith("numba_cuda_mlir") and not REAL_GPU:
        pytest.skip("numba-cuda-mlir compiles only with a CUDA driver")


def _numba():
    """(cuda, types) of the Numba fdlink.numba uses: numba-cuda's or numba-cuda-mlir's."""
    fn = _bridge()
    return fn._cuda(), fn._types()


def test_declare_device_gives_one_descriptor_per_declaration(arch):
    fn = _bridge()
    d = fn.declare_device(BOTH_DECL, [BOTH_CU], arch=arch)
    assert sorted(d) == ["add_c", "mul_f32_f32"] and len(d) == 2
    assert d.mul_f32_f32 is d["mul_f32_f32"]
    # every descriptor links the same checked object: LTO-IR compiled from the CUDA C
    assert [type(x).__name__ for x in d.link] == ["LTOIR"]
    data = d.link[0].data
    assert fdlink._fdlink.detect(data, "x") == "ltoir"
    assert d.check["arch"] == arch
    assert d.declarations["add_c"].abi == "c"
    # a second call is a cache hit: NVRTC does not run again
    d2 = fn.declare_device(BOTH_DECL, [BOTH_CU], arch=arch)
    assert d2.check["nvrtc_compiled"] == 0 and d2.check["nvrtc_cache_hits"] == 1
    assert d2.link[0].data == data


def test_declare_device_from_a_library_and_names(arch):
    fn = _bridge()
    lib = fdlink.Library(BOTH_DECL, [BOTH_CU], arch=arch)
    d = fn.declare_device(lib, names=["add_c"])
    assert list(d) == ["add_c"] and d.library is lib
    with pytest.raises(KeyError, match="nope"):
        fn.declare_device(lib, names=["add_c", "nope"])


def test_ptx_on_request_and_other_kinds_as_they_are(arch):
    fn = _bridge()
    d = fn.declare_device(MUL_DECL, [MUL_CU], arch=arch, output="ptx")
    assert [type(x).__name__ for x in d.link] == ["PTXSource"]
    assert b"mul_f32_f32" in bytes(d.link[0].data)
    d = fn.declare_device(DATA / "link" / "mul.decl", [DATA / "link" / "mul.ptx"], arch=arch)
    assert [type(x).__name__ for x in d.link] == ["PTXSource"]
    assert d.link[0].name == "mul.ptx"
    with pytest.raises(ValueError, match="output"):
        fn.declare_device(MUL_DECL, [MUL_CU], arch=arch, output="cubin")


def test_wrong_width_is_refused_with_the_decl_line(arch):
    fn = _bridge()
    decl = "# widths\nmul_f32_f32: float64(float64, float64)\n"
    with pytest.raises(fdlink.ABIError) as e:
        fn.declare_device(decl, [DATA / "link" / "mul.ptx"], arch=arch, name="wide.decl")
    err = e.value
    assert err.symbol == "mul_f32_f32"
    assert "declared at wide.decl:2:1" in str(err)


def test_cuda_c_that_disagrees_is_refused_as_an_abi_error(arch):
    # NVRTC refuses it (the prototypes are pre-included): an ABIError with both signatures
    fn = _bridge()
    decl = "# widths\nmul_f32_f32: float64(float64, float64)\n"
    with pytest.raises(fdlink.ABIError) as e:
        fn.declare_device(decl, [fdlink.Source(MUL_CU, name="mul.cu")], arch=arch,
                          name="wide.decl")
    err = e.value
    assert (err.rule, err.declaration, err.symbol) == ("ABI-5", "wide.decl:2:1", "mul_f32_f32")
    assert "defined as (float *, float, float), declared float64(float64, float64)" in str(err)


def test_missing_definition_is_refused_with_the_decl_line(arch):
    fn = _bridge()
    decl = MUL_DECL + "missing_fn: float32(float32)\n"
    with pytest.raises(fdlink.ABIError) as e:
        fn.declare_device(decl, [MUL_CU], arch=arch, name="m.decl")
    assert str(e.value).startswith("m.decl:2:1: missing_fn: declared but not defined")


def test_no_sources_is_refused(arch):
    fn = _bridge()
    with pytest.raises(ValueError, match="no sources"):
        fn.declare_device(MUL_DECL, [], arch=arch)


def _numba_add():
    float32 = _numba()[1].float32

    def add_numba(a, b):
        return a + b
    return add_numba, (float32, float32)


def test_numba_ltoir_checked_against_an_abi_c_declaration(arch):
    _compiles()
    fn = _bridge()
    f, sig = _numba_add()
    src = fn.compile_ltoir(f, sig, arch=arch)
    assert src.kind == "ltoir" and src.name == "add_numba.ltoir"
    lib = fdlink.Library("add_numba: float32(float32, float32) abi=c\n", [src], arch=arch)
    assert lib.declaration("add_numba").abi == "c"
    with pytest.raises(fdlink.ABIError) as e:
        fdlink.Library("add_numba: float64(float64, float64) abi=c\n", [src], arch=arch,
                       name="n.decl")
    assert "declared at n.decl:1:1" in str(e.value) and e.value.symbol == "add_numba"


# ---- on a GPU ---------------------------------------------------------------------------------

def _sass(kernel):
    if shutil.which("nvdisasm") is None:
        for d in ("/usr/local/cuda/bin", os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"),
                                                      "bin")):
            if os.path.exists(os.path.join(d, "nvdisasm")):
                os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
                break
        else:
            pytest.skip("nvdisasm is not on PATH (needed to read the SASS)")
    sass = kernel.inspect_sass()  # a dict {signature: SASS} without a signature
    return "\n".join(sass.values()) if isinstance(sass, dict) else sass


@pytest.mark.gpu
def test_kernel_output_equals_fdlink_map_and_the_call_is_inlined():
    import numpy as np
    cuda, _ = _numba()

    fn = _bridge()
    d = fn.declare_device(BOTH_DECL, [BOTH_CU])
    mul, add_c = d.mul_f32_f32, d.add_c

    @cuda.jit
    def k(y, z, a, b):
        i = cuda.grid(1)
        if i < y.size:
            y[i] = mul(a[i], b[i])
            z[i] = add_c(a[i], b[i])

    n = 100_003
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dy, dz = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
    k[(n + 255) // 256, 256](dy, dz, da, db)
    y = dy.copy_to_host()
    np.testing.assert_array_equal(y, a * b)
    np.testing.assert_array_equal(dz.copy_to_host(), a + b)
    # fdlink's own map of the same function over the same Numba arrays
    m = cuda.device_array(n, np.float32)
    d.library.map("mul_f32_f32")(m, da, db)
    np.testing.assert_array_equal(m.copy_to_host(), y)
    sass = _sass(k)
    assert "FMUL" in sass and "FADD" in sass
    # the call instructions (CALL.REL, CALL.ABS.NOINC, ...), not any text with "CALL" in it:
    # nvdisasm's listing also names the .nv.callgraph section (SHT_CUDA_CALLGRAPH), and a Numba
    # kernel may call helpers of its own; none may call the declared functions' symbols
    calls = _call_lines(sass)
    print("CALL instructions in the kernel's SASS:", *calls or ["(none)"], sep="\n  ")
    foreign = [ln for ln in calls for sym in ("mul_f32_f32", "add_c")
               if re.search(rf"\b{sym}\b", ln)]
    assert not foreign, f"the foreign function was not inlined by LTO: {foreign}"


def _call_lines(sass):
    return [ln.strip() for ln in sass.splitlines() if re.search(r"\bCALL(\.[A-Z]+)*\b", ln)
            and not ln.lstrip().startswith(".")]


def test_call_lines_reads_instructions_only():
    listing = "\n".join([
        "\t.section\t.nv.callgraph,\"\",@\"SHT_CUDA_CALLGRAPH\"",
        "        /*0090*/                   CALL.REL.NOINC `(mul_f32_f32) ;",
        "        /*00a0*/                   FMUL R0, R2, R3 ;"])
    assert _call_lines(listing) == ["/*0090*/                   CALL.REL.NOINC `(mul_f32_f32) ;"]
    assert _call_lines("\t.section\t.nv.callgraph,\"\",@\"SHT_CUDA_CALLGRAPH\"") == []


@pytest.mark.gpu
def test_ptx_descriptor_runs():
    import numpy as np
    cuda, _ = _numba()

    fn = _bridge()
    mul = fn.declare_device(MUL_DECL, [MUL_CU], output="ptx").mul_f32_f32

    @cuda.jit
    def k(y, a):
        i = cuda.grid(1)
        if i < y.size:
            y[i] = mul(a[i], 3.0)

    a = np.arange(1000, dtype=np.float32)
    dy = cuda.device_array(1000, np.float32)
    k[4, 256](dy, cuda.to_device(a))
    np.testing.assert_array_equal(dy.copy_to_host(), a * np.float32(3.0))


@pytest.mark.gpu
def test_numba_function_in_an_fdlink_map():
    import numpy as np

    fn = _bridge()
    f, sig = _numba_add()
    lib = fdlink.Library("add_numba: float32(float32, float32) abi=c\n",
                         [fn.compile_ltoir(f, sig)])
    n = 4099
    a = np.linspace(-3, 3, n, dtype=np.float32)
    b = np.float32(0.5)
    x = fdlink.to_device(a)
    out = fdlink.empty(n, "float32")
    lib.map("add_numba")(out, x, b)
    np.testing.assert_array_equal(fdlink.to_host(out), a + b)


# ---- fdlink's cached path for Numba kernels with plain-pointer parameters ----------------------

def _pointer_kernel():
    cuda, types = _numba()

    mul = cuda.declare_device("mul_f32_f32", "float32(float32, float32)")

    def scale_ptr(y, x, n):
        i = cuda.grid(1)
        if i < n:
            y[i] = mul(x[i], 3.0)
    sig = types.void(types.CPointer(types.float32), types.CPointer(types.float32), types.int32)
    return scale_ptr, sig


def test_numba_kernel_linked_and_cached_by_fdlink(arch):
    _compiles()
    cuda, _ = _numba()

    fn = _bridge()
    f, sig = _pointer_kernel()
    src = fn.compile_kernel(f, sig, arch=arch)
    assert src.kind == "ltoir" and src.name == "scale_ptr.ltoir"
    lib = fdlink.Library(MUL_DECL, [MUL_CU], arch=arch)
    m1 = lib.link(src)
    m2 = lib.link(src)
    assert m2.info["cache"] in ("memory", "disk") and m2.cubin == m1.cubin
    # the entry is found by the Python name Numba mangled into it
    ptx, _ = cuda.compile(f, sig, device=False, abi="numba", output="ptx",
                          cc=tuple(int(c) for c in arch[3:5]))
    entry = [ln.split()[2].split("(")[0] for ln in ptx.splitlines() if ".entry" in ln][0]
    assert fn._pick_entry(["other_kernel", entry], "scale_ptr") == entry
    with pytest.raises(LookupError, match="scale_ptr"):
        fn._pick_entry(["other_kernel"], "scale_ptr")


CACHED_CHILD = r'''
import sys
sys.path.insert(0, sys.argv[1])
import fdlink, fdlink.numba as fn
from test_numba_bridge import _pointer_kernel
from conftest import MUL_CU, MUL_DECL
f, sig = _pointer_kernel()
lib = fdlink.Library(MUL_DECL, [MUL_CU], arch=sys.argv[2])
m = lib.link(fn.compile_kernel(f, sig, arch=sys.argv[2]))
print(m.info["cache"], m.info["nvrtc_compiled"])
'''


def test_numba_kernel_link_cached_across_processes(arch, tmp_path):
    """Numba compiles the kernel again in each process (to the same LTO-IR); fdlink's link of it
    with the library is a disk hit in the second process, the CUDA C not compiled again."""
    _compiles()
    import subprocess
    import sys

    env = dict(os.environ, FDLINK_CACHE_DIR=str(tmp_path / "cache"))
    here = os.path.dirname(os.path.abspath(__file__))
    runs = [subprocess.run([sys.executable, "-c", CACHED_CHILD, here, arch], env=env,
                           capture_output=True, text=True, check=False) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split()[0] == "miss"
    assert runs[1].stdout.split() == ["disk", "0"]


@pytest.mark.gpu
@pytest.mark.cupy
def test_numba_kernel_launched_by_fdlink_with_cupy_arrays():
    import cupy as cp
    import numpy as np

    fn = _bridge()
    f, sig = _pointer_kernel()
    lib = fdlink.Library(MUL_DECL, [MUL_CU])
    k = fn.link_kernel(lib, f, sig, signature="float *y, const float *x, int n")
    n = 70_001
    x = np.linspace(-2, 2, n, dtype=np.float32)
    cx, cy = cp.asarray(x), cp.zeros(n, dtype=cp.float32)
    k[(n + 255) // 256, 256](cy, cx, n)
    np.testing.assert_array_equal(cp.asnumpy(cy), x * np.float32(3.0))
