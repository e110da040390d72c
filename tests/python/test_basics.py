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


def test_cuda_c_that_disagrees_does_not_compile(arch):
    bad = 'extern "C" __device__ int mul_f32_f32(double *r, double a, double b) { return 0; }'
    with pytest.raises(fdlink.ParseError) as e:
        fdlink.Library(MUL_DECL, [bad], arch=arch)
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
