"""Fat binaries and warm deployments from Python (issue 40): ``link(..., arch=[...])`` and
``Library.link(..., arch=[...])`` give a FatModule over one fatbin whose entries are the single
links' bytes; ``require_warm`` (and FDLINK_REQUIRE_WARM) make a cache miss a NotFoundError naming
what missed; ``fdlink.prewarm`` warms a cache or writes a bundle that a fresh cache imports. On a
GPU host: the driver picks the sm_90 cubin of an sm_80+sm_90 fatbin, and JIT-compiles the PTX of
an sm_80+compute_80 one."""

import os
import pathlib
import struct

import pytest

import fdlink
from fdlink import _cli

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
DECL = REPO / "device" / "functions.decl"
FUNCTIONS = REPO / "device" / "src" / "functions.cu"
CALLERS = REPO / "device" / "src" / "callers.cu"
ARCH_OF = ('extern "C" __global__ void arch_of(int *out) '
           '{ out[threadIdx.x] = __CUDA_ARCH__ + (int)threadIdx.x; }\n')


def _entries(fat: bytes):
    """[(kind, arch, payload)] of a fatbin of one container (the layout of nvcc's fatbinary)."""
    magic, version, hsize, body = struct.unpack_from("<IHHQ", fat, 0)
    assert (magic, version, hsize, body) == (0xBA55ED50, 1, 16, len(fat) - 16)
    at, out = 16, []
    while at < len(fat):
        kind, _, ehsize, psize = struct.unpack_from("<HHIQ", fat, at)
        (arch,) = struct.unpack_from("<I", fat, at + 28)
        out.append((kind, arch, fat[at + ehsize:at + ehsize + psize]))
        at += ehsize + psize
    assert at == len(fat)
    return out


def test_link_arch_list_is_a_fatbin_of_the_single_links():
    m = fdlink.link(ARCH_OF, arch=["sm_80", "sm_90", "compute_90"])
    assert isinstance(m, fdlink.FatModule)
    assert m.info["archs"] == ["sm_80", "sm_90", "compute_90"]
    assert sorted(m.info["links"]) == ["sm_80", "sm_90"]
    assert m.cubin == m.fatbin
    e = _entries(m.fatbin)
    assert [(k, a) for k, a, _ in e] == [(2, 80), (2, 90), (1, 90)]
    s80 = fdlink.link(ARCH_OF, arch="sm_80")
    s90 = fdlink.link(ARCH_OF, arch="sm_90", emit_ptx=True)
    assert e[0][2][:len(s80.cubin)] == s80.cubin
    assert e[1][2][:len(s90.cubin)] == s90.cubin
    ptx = s90.ptx.encode()
    assert e[2][2][:len(ptx)] == ptx and e[2][2][len(ptx)] == 0
    # a comma list too; one architecture in a list is a plain link
    assert fdlink.link(ARCH_OF, arch="sm_80,sm_90").info["archs"] == ["sm_80", "sm_90"]
    assert not isinstance(fdlink.link(ARCH_OF, arch=["sm_90"]), fdlink.FatModule)



def test_isolated_fat_link_links_one_after_another():
    """Isolated links fork a child each: a fat link of them runs them in turn (a fork beside
    running threads can leave the child waiting for a lock), with the same bytes as in-process."""
    iso = fdlink.link(ARCH_OF, arch=["sm_80", "sm_90"], isolate=True, cache=False)
    here = fdlink.link(ARCH_OF, arch=["sm_80", "sm_90"], cache=False)
    assert [(k, a) for k, a, _ in _entries(iso.fatbin)] == [(2, 80), (2, 90)]
    assert iso.fatbin == here.fatbin

def test_library_link_arch_list():
    lib = fdlink.Library(DECL, [FUNCTIONS], arch=["sm_80", "sm_90"])
    m = lib.link(CALLERS)
    assert isinstance(m, fdlink.FatModule) and m.info["archs"] == ["sm_80", "sm_90"]
    assert [(k, a) for k, a, _ in _entries(m.fatbin)] == [(2, 80), (2, 90)]
    m2 = lib.link(CALLERS, arch=["sm_90", "compute_90"])
    assert m2.info["archs"] == ["sm_90", "compute_90"]


def test_bad_arch_in_a_list():
    with pytest.raises(ValueError, match="arch 'sm_9' in a list"):
        fdlink.link(ARCH_OF, arch=["sm_80", "sm_9"])
    with pytest.raises(fdlink.InvalidArgumentError):
        fdlink._fdlink.fatbin([(1, 80, b"not ptx")])


def test_require_warm_names_the_miss(tmp_path):
    src = ARCH_OF.replace("threadIdx.x;", "threadIdx.x + 7;")
    with pytest.raises(fdlink.NotFoundError) as e:
        fdlink.link(src, arch="sm_90", cache_dir=tmp_path, require_warm=True)
    assert e.value.source == "input0.cu"
    assert "cache miss: the NVRTC compile of input0.cu for sm_90 (key " in e.value.message
    fdlink.link(src, arch="sm_90", cache_dir=tmp_path)  # warmed
    m = fdlink.link(src, arch="sm_90", cache_dir=tmp_path, require_warm=True)
    assert m.info["cache"] in ("memory", "disk")
    fdlink.link(src, arch="sm_90", cache_dir=tmp_path / "other", require_warm=False)


def test_require_warm_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FDLINK_REQUIRE_WARM", "1")
    with pytest.raises(fdlink.NotFoundError, match="FDLINK_REQUIRE_WARM forbids"):
        fdlink.link(ARCH_OF.replace("+ (int)", "- (int)"), arch="sm_90", cache_dir=tmp_path)


@pytest.mark.skipif(not os.access(_cli.executable(), os.X_OK), reason="no fdlink CLI here")
def test_prewarm_bundle_then_warm_library(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    for f in (DECL, FUNCTIONS, CALLERS):
        (proj / f.name).write_bytes(f.read_bytes())
    (proj / "app.manifest").write_text(
        "-arch=sm_80,sm_90 --decl functions.decl functions.cu callers.cu -o app.fatbin\n")
    monkeypatch.setenv("FDLINK_CACHE_DIR", str(tmp_path / "build-cache"))
    line = fdlink.prewarm(proj / "app.manifest", bundle=tmp_path / "warm.bundle")
    assert line.startswith("prewarmed 1 link into ")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert fdlink.cache.import_(tmp_path / "warm.bundle", directory=fresh)["imported"] > 0
    monkeypatch.setenv("FDLINK_CACHE_DIR", str(fresh))
    monkeypatch.setenv("FDLINK_REQUIRE_WARM", "1")
    monkeypatch.chdir(proj)
    # the program, as the manifest's line: the library's sources and the callers
    m = fdlink.link("functions.cu", "callers.cu", decls="functions.decl", arch=["sm_80", "sm_90"])
    assert {i["cache"] for i in m.info["links"].values()} <= {"memory", "disk"}
    (proj / "functions.cu").write_text((proj / "functions.cu").read_text() + "// changed\n")
    with pytest.raises(fdlink.NotFoundError, match="functions.cu") as e:
        fdlink.link("functions.cu", "callers.cu", decls="functions.decl", arch=["sm_80", "sm_90"])
    assert "cache miss" in e.value.message
    with pytest.raises(fdlink.Error, match="nothere.cu"):
        (proj / "bad.manifest").write_text("-arch=sm_90 nothere.cu\n")
        fdlink.prewarm(proj / "bad.manifest")


@pytest.mark.gpu
@pytest.mark.parametrize("archs, want", [(["sm_80", "sm_90"], "device"),
                                          (["sm_80", "compute_80"], 800)])
def test_fatbin_runs_the_image_the_driver_picks(archs, want):
    np = pytest.importorskip("numpy")
    dev = fdlink.device()
    major_minor = int(dev.arch.split("_")[1].rstrip("af"))
    if "sm_90" in archs and major_minor != 90:
        pytest.skip(f"the sm_90 cubin needs an sm_90 GPU, not {dev.arch}")
    if want == 800 and major_minor // 10 == 8:
        pytest.skip("an sm_8x GPU runs the sm_80 cubin, not the PTX")
    m = fdlink.link(ARCH_OF, arch=archs)
    out = fdlink.empty(32, "i4")
    m.kernel("arch_of", "int *out")[1, 32](out)
    got = np.asarray(fdlink.to_host(out))
    expect = (major_minor * 10 if want == "device" else want) + np.arange(32)
    assert (got == expect).all(), got[:4]
