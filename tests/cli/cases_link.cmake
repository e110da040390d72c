# Golden cases of `fdlink link` and `fdlink inspect` over the checked-in data. The cases over
# inputs of every kind, which nvcc builds at build time, are in tests/link/CMakeLists.txt.

# link
fdlink_cli_test(link_help ARGS link --help)
fdlink_cli_test(link_ok PRESENT app.cubin
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
fdlink_cli_test(link_checked PRESENT app.cubin
  ARGS link -arch=sm_80 --decl check/functions.decl -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
fdlink_cli_test(link_abi_mismatch
  ARGS link -arch=sm_90 --decl check/functions.decl -o @OUT@/app.cubin check/caller.ptx check/wrong_width.ptx
  ABSENT app.cubin)
fdlink_cli_test(link_undefined_symbol
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/caller.ptx check/missing.ptx ABSENT app.cubin)
fdlink_cli_test(link_duplicate_ptx
  ARGS link -arch=sm_90 -o @OUT@/app.cubin link/caller.ptx link/mul.ptx link/mul.ptx
  ABSENT app.cubin)
fdlink_cli_test(link_missing_arch ARGS link -o @OUT@/app.cubin check/caller.ptx)
fdlink_cli_test(link_bad_arch ARGS link -arch=sm90 -o @OUT@/app.cubin check/caller.ptx ABSENT app.cubin)
fdlink_cli_test(link_not_ptx ARGS link -arch=sm_90 -o @OUT@/app.cubin cli/notes.txt ABSENT app.cubin)
fdlink_cli_test(link_png ARGS link -arch=sm_90 -o @OUT@/app.cubin link/logo.png ABSENT app.cubin)
fdlink_cli_test(link_empty ARGS link -arch=sm_90 -o @OUT@/app.cubin link/empty.ptx ABSENT app.cubin)
fdlink_cli_test(link_directory ARGS link -arch=sm_90 -o @OUT@/app.cubin link ABSENT app.cubin)
fdlink_cli_test(link_missing_input
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/nonexistent.ptx ABSENT app.cubin)
fdlink_cli_test(link_no_inputs ARGS link -arch=sm_90)
fdlink_cli_test(link_bad_opt_level ARGS link -arch=sm_90 -O7 check/caller.ptx)
fdlink_cli_test(link_bad_kind ARGS link -arch=sm_90 --kind=png:link/logo.png)
fdlink_cli_test(link_kind_needs_path ARGS link -arch=sm_90 --kind=ptx)
fdlink_cli_test(link_stated_kind_mismatch
  ARGS link -arch=sm_90 -o @OUT@/app.cubin --kind=cubin:link/mul.ptx ABSENT app.cubin)
fdlink_cli_test(link_bad_backend ARGS link -arch=sm_90 --backend=ptxas link/mul.ptx)
fdlink_cli_test(link_culink_with_lto
  ARGS link -arch=sm_90 --backend=culink --lto -o @OUT@/app.cubin link/mul.ptx ABSENT app.cubin)
fdlink_cli_test(link_culink_with_ftz
  ARGS link -arch=sm_90 --backend=culink --ftz=1 -o @OUT@/app.cubin link/mul.ptx ABSENT app.cubin)
fdlink_cli_test(link_emit_ptx_without_lto
  ARGS link -arch=sm_90 --no-lto --emit-ptx=@OUT@/post.ptx -o @OUT@/app.cubin link/mul.ptx
  ABSENT app.cubin post.ptx)
fdlink_cli_test(link_bad_ftz ARGS link -arch=sm_90 --ftz=2 link/mul.ptx)
fdlink_cli_test(link_nvjitlink_option
  ARGS link -arch=sm_90 -Xnvjitlink -no-such-option -o @OUT@/app.cubin link/mul.ptx
  ABSENT app.cubin)

# inspect
fdlink_cli_test(inspect_help ARGS inspect --help)
fdlink_cli_test(inspect_ptx ARGS inspect link/caller.ptx link/mul.ptx)
fdlink_cli_test(inspect_cuda ARGS inspect link/src/mul.cu)
fdlink_cli_test(inspect_not_an_input ARGS inspect link/logo.png cli/notes.txt link/empty.ptx link)
fdlink_cli_test(inspect_no_inputs ARGS inspect)
fdlink_cli_test(inspect_bad_kind ARGS inspect --kind=png link/logo.png)

# -Xnvrtc (issue 34): raw NVRTC options for CUDA C inputs, as MathDx's NVRTC recipes compile.
# Unannotated (constexpr) functions are host functions to NVRTC unless it is told otherwise.
fdlink_cli_test(link_cuda_unannotated_needs_default_device ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin nvrtc/unannotated.cu)
fdlink_cli_test(link_xnvrtc_device_as_default_execution_space PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache -Xnvrtc --device-as-default-execution-space
       -o @OUT@/app.cubin nvrtc/unannotated.cu)
fdlink_cli_test(link_xnvrtc_default_device PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache -Xnvrtc -default-device -o @OUT@/app.cubin
       nvrtc/unannotated.cu)
# nvcc's --expt-relaxed-constexpr is no NVRTC 13 option: NVRTC's refusal, with the alternative
fdlink_cli_test(link_xnvrtc_expt_relaxed_constexpr ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache -Xnvrtc --expt-relaxed-constexpr -o @OUT@/app.cubin
       nvrtc/host_constexpr.cu)
# whole-program code: fdlink leaves out its -rdc=true, which NVRTC refuses beside -ewp
fdlink_cli_test(link_xnvrtc_extensible_whole_program PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache -Xnvrtc --extensible-whole-program -o @OUT@/app.cubin
       nvrtc/whole_program.cu)
fdlink_cli_test(link_xnvrtc_ewp_without_lto PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache --no-lto -Xnvrtc -ewp -o @OUT@/app.cubin
       nvrtc/whole_program.cu)
fdlink_cli_test(link_xnvrtc_dopt PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache -Xnvrtc -dopt=on -o @OUT@/app.cubin nvrtc/whole_program.cu)
fdlink_cli_test(link_xnvrtc_missing_value ARGS link -arch=sm_90 -o @OUT@/app.cubin -Xnvrtc)
# the headline is the first fatal error (the missing header), not the cascade before it; NVRTC's
# log follows with what it adds (the other errors), never the headline again (issue 34)
fdlink_cli_test(link_cuda_missing_header_is_the_headline ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin nvrtc/missing_header.cu)
fdlink_cli_test(link_cuda_missing_header_verbose_log_whole ABSENT app.cubin
  ARGS link -arch=sm_90 -v --no-cache -o @OUT@/app.cubin nvrtc/missing_header.cu)
fdlink_cli_test(link_cuda_missing_header_json_has_the_log ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache --diagnostics-format=json -o @OUT@/app.cubin
       nvrtc/missing_header.cu)

# undefined symbols (issue 34): C++ names demangled with the mangled name kept, and the input or
# the well-known library that defines or would define them
fdlink_cli_test(link_undefined_mathdx_demangled ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin undefined/mathdx.cu)
fdlink_cli_test(link_undefined_nvshmem ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin undefined/nvshmem.cu)
fdlink_cli_test(link_undefined_libdevice ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin undefined/libdevice_caller.ptx)
fdlink_cli_test(link_undefined_extern_c_on_one_side ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache --no-lto -o @OUT@/app.cubin link/caller.ptx
       undefined/mul_cxx.cu)
fdlink_cli_test(link_undefined_mathdx_json ABSENT app.cubin
  ARGS link -arch=sm_90 --no-cache --diagnostics-format=json -o @OUT@/app.cubin
       undefined/mathdx.cu)

# NVVM bitcode inputs (issue 34), recognised from their bytes and compiled with libNVVM into
# LTO-IR: the toolkit's libdevice defines __nv_sinf for a caller that left it to the link
set(_fdl_libdevice ${FDLINK_CUDA_ROOT}/nvvm/libdevice)
if(EXISTS ${_fdl_libdevice}/libdevice.10.bc)
  fdlink_cli_test(inspect_bitcode_libdevice WORKDIR ${_fdl_libdevice} ARGS inspect libdevice.10.bc)
  # (-w: a PTX caller beside libdevice's LTO-IR is warned about, naming the absolute path)
  fdlink_cli_test(link_bitcode_libdevice PRESENT app.cubin WORKDIR ${_fdl_libdevice}
    ARGS link -arch=sm_90 --no-cache -w -o @OUT@/app.cubin
         ${PROJECT_SOURCE_DIR}/tests/data/undefined/libdevice_caller.ptx libdevice.10.bc)
  fdlink_cli_test(link_bitcode_libdevice_without_lto PRESENT app.cubin WORKDIR ${_fdl_libdevice}
    ARGS link -arch=sm_90 --no-cache --no-lto -o @OUT@/app.cubin
         ${PROJECT_SOURCE_DIR}/tests/data/undefined/libdevice_caller.ptx
         --kind=bitcode:libdevice.10.bc)
endif()
if(EXISTS ${_fdl_libdevice}/libdevice.10.bc)
  fdlink_cli_test(link_bitcode_without_libnvvm ABSENT app.cubin WORKDIR ${_fdl_libdevice}
    ENV FDLINK_NVVM=/nonexistent/libnvvm.so.4
    ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin libdevice.10.bc)
endif()

# advice after a link (issue 34): a PTX caller beside large LTO-IR (nvJitLink then compiles the
# library without seeing its callers), said once
fdlink_cli_test(link_ptx_caller_of_large_ltoir SCRUB_LTOIR PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin link/caller.ptx advice/large_library.cu)

# nvJitLink 13.5's cubins (issue 40): section and program header tables at 4 and 6 mod 8, which
# the ELF specification allows and readelf, nvJitLink 13.5 and the driver take, are inspected
fdlink_cli_test(inspect_nvjitlink135_cubin ARGS inspect link/nvjitlink135/twice_sm90.cubin)
fdlink_cli_test(inspect_nvjitlink135_relocatable_cubin
  ARGS inspect link/nvjitlink135/scale_sm100_rdc.cubin)
