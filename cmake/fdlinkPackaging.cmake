# Packaging: `cpack -G DEB` (or `cmake --build build --target package`) makes a Debian package of
# what `cmake --install` installs: the shared and static library, the headers, the fdlink tool,
# the CMake package and the pkg-config file, under /usr. libcuda, nvJitLink and NVRTC are opened
# at run time (dlopen), so the package depends on none of them: its dependencies are what
# dpkg-shlibdeps finds the binaries linked against (the C library), or libc6 where dpkg-shlibdeps
# (package dpkg-dev) is missing. The CUDA toolkit is suggested: the CMake functions need its nvcc.
set(CPACK_PACKAGE_NAME fdlink)
set(CPACK_PACKAGE_VENDOR fdlink)
set(CPACK_PACKAGE_CONTACT "fdlink maintainers <fdlink@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "foreign device functions built ahead of time and linked into CUDA kernels")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "foreign device functions built ahead of time and linked into CUDA kernels
 fdlink checks device functions of the Numba foreign-function ABI against their
 declared signatures, links them into caller kernels with nvJitLink or the
 driver's linker, and loads, launches and verifies them from C. This package
 holds the C library (shared and static), its headers, the fdlink tool, the
 CMake package (find_package(fdlink)) and the pkg-config file. The CUDA
 driver, nvJitLink and NVRTC are opened at run time when needed.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cuda-toolkit | nvidia-cuda-toolkit")
find_program(FDLINK_DPKG_SHLIBDEPS dpkg-shlibdeps)
mark_as_advanced(FDLINK_DPKG_SHLIBDEPS)
if(FDLINK_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6")
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
