# Golden cases of `fdlink run` and `fdlink doctor` (no GPU needed). The environment decides what
# "the driver" is, so that every case gives the same output everywhere, GPU hosts included:
#   _nogpu  FDLINK_LIBCUDA names a library that does not exist: no driver
#   _mock   the mock driver of tests/gpu/mock, which runs multiply_vectors on the host
# Data in tests/data/run: mv_expected.f32 (8 floats: 2.5 i), mv_wrong.f32 (element 5 is 12.25
# instead of 12.5), short.f32 (3 floats), sqrt_in.f32 (0 1 4 9 -16 25 -36 49), safe_sqrt.cu and
# safe_sqrt.decl (a function that fails with status 1 for a negative argument).
set(_nogpu ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1)
set(_mock ENV FDLINK_LIBCUDA=$<TARGET_FILE:fdlink_mock_cuda>)
# multiply_vectors (out = a * b through mul_f32_f32), linked for sm_90 with nvJitLink
set(_mv -arch=sm_90 --decl link/mul.decl link/mul.ptx link/caller.ptx -k multiply_vectors
        --grid 1 --block 8)
set(_mv_args f32[8] f32[8]=iota f32[8]=2.5 i32:8)

fdlink_cli_test(run_help ARGS run --help)
fdlink_cli_test(doctor_help ARGS doctor --help)
# doctor's command line: --ctest-resource-spec first or not at all, "-" an unknown option
fdlink_cli_test(doctor_resource_spec_not_first ARGS doctor --json --ctest-resource-spec)
fdlink_cli_test(doctor_resource_spec_options ARGS doctor --ctest-resource-spec --slots)
fdlink_cli_test(doctor_dash ARGS doctor -)
fdlink_cli_test(doctor_arch_not_sm ARGS doctor --arch compute_90)

# run: no GPU here is a skip (exit 77), after the link has been checked
fdlink_cli_test(run_no_gpu ${_nogpu} ARGS run ${_mv} ${_mv_args})
# run: the command line
fdlink_cli_test(run_no_code ARGS run -k multiply_vectors)
fdlink_cli_test(run_no_kernel ARGS run link/mul.ptx)
fdlink_cli_test(run_unknown_buffer_type ARGS run ${_mv} f32[8] float[8]=iota f32[8]=2.5 i32:8)
fdlink_cli_test(run_unknown_scalar_type ARGS run ${_mv} f32[8] f32[8] f32[8] int:8)
fdlink_cli_test(run_scalar_out_of_range ARGS run ${_mv} f32[8] f32[8] f32[8] i8:300)
fdlink_cli_test(run_buffer_length_zero ARGS run ${_mv} f32[0] f32[8] f32[8] i32:8)
fdlink_cli_test(run_unknown_fill ARGS run ${_mv} f32[8] f32[8]=sequence f32[8] i32:8)
fdlink_cli_test(run_bad_struct ARGS run ${_mv} f32[8] f32[8] f32[8] {i32:1,})
fdlink_cli_test(run_bad_grid ARGS run ${_mv} --grid 4x4 ${_mv_args})
fdlink_cli_test(run_ulp_and_tolerance ARGS run ${_mv} ${_mv_args} --ulp 1 --rtol 1e-6)
fdlink_cli_test(run_expect_scalar ARGS run ${_mv} ${_mv_args} --expect 3=run/mv_expected.f32)
fdlink_cli_test(run_expect_missing_arg ARGS run ${_mv} ${_mv_args} --out 7=@OUT@/x.f32)
# run: files that disagree with their buffers, found before any GPU is needed
fdlink_cli_test(run_file_shorter ${_nogpu} ARGS run ${_mv} f32[8] f32[8]@run/short.f32 f32[8]=2.5 i32:8)
fdlink_cli_test(run_expect_file_shorter ${_nogpu}
  ARGS run ${_mv} ${_mv_args} --expect 0=run/short.f32)
fdlink_cli_test(run_file_missing ${_nogpu} ARGS run ${_mv} f32[8] f32[8]@run/none.f32 f32[8] i32:8)

# run on the mock driver: results, mismatches and the kernel's parameters
fdlink_cli_test(run_mock_expect ${_mock} PRESENT out.f32
  ARGS run ${_mv} ${_mv_args} --expect 0=run/mv_expected.f32 --out 0=@OUT@/out.f32)
fdlink_cli_test(run_mock_mismatch ${_mock} ARGS run ${_mv} ${_mv_args} --expect 0=run/mv_wrong.f32)
fdlink_cli_test(run_mock_within_tolerance ${_mock}
  ARGS run ${_mv} ${_mv_args} --expect 0=run/mv_wrong.f32 --atol 0.25)
fdlink_cli_test(run_mock_ulp ${_mock}
  ARGS run ${_mv} ${_mv_args} --expect 0=run/mv_wrong.f32 --ulp 1)
# the kernel's parameters as the PTX declares them: checked with no driver at all
fdlink_cli_test(run_too_few_args ${_nogpu} ARGS run ${_mv} f32[8] f32[8]=iota f32[8]=2.5)
fdlink_cli_test(run_wrong_size ${_nogpu} ARGS run ${_mv} f32[8] f32[8]=iota f32[8]=2.5 i64:8)
fdlink_cli_test(run_struct_size ${_nogpu} ARGS run ${_mv} f32[8] f32[8] {i32:1,f64:2} i32:8)
# ... and as the driver reports them, for code whose PTX fdlink does not see (CUDA C here)
set(_mv_cuda -arch=sm_90 link/src/mul.cu link/src/caller.cu -k multiply_vectors --block 8)
fdlink_cli_test(run_mock_too_few_args ${_mock} ARGS run ${_mv_cuda} f32[8] f32[8]=iota f32[8]=2.5)
fdlink_cli_test(run_mock_wrong_size ${_mock} ARGS run ${_mv_cuda} f32[8] f32[8] f32[8] i64:8)
fdlink_cli_test(run_mock_cuda_expect ${_mock}
  ARGS run ${_mv_cuda} ${_mv_args} --expect 0=run/mv_expected.f32)
fdlink_cli_test(run_mock_unknown_kernel ${_mock}
  ARGS run -arch=sm_90 --decl link/mul.decl link/mul.ptx link/caller.ptx -k multiply ${_mv_args})
fdlink_cli_test(run_mock_bad_launch ${_mock} ARGS run ${_mv} --block 2048 ${_mv_args})

# link --backend=culink opens a device itself; without one it says why in one line
fdlink_cli_test(link_culink_no_gpu ${_nogpu} ABSENT a.cubin
  ARGS link --backend=culink -arch=sm_90 -o @OUT@/a.cubin link/mul.ptx link/caller.ptx)
fdlink_cli_test(link_native_no_gpu ${_nogpu} ABSENT a.cubin
  ARGS link -arch=native -o @OUT@/a.cubin link/mul.ptx link/caller.ptx)

# doctor: the exit status and fields of --json (paths and versions vary by machine, so no golden)
# fdlink_doctor_test(<name> RC <status> [ENV NAME=VALUE...] [STDERR regex] [STDOUT regex] [TEXT]
#                    [EXPECT PATH=VALUE...] ARGS args...)
function(fdlink_doctor_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "TEXT" "RC;STDERR;STDOUT" "ARGS;ENV;EXPECT")
  # lists travel joined by '|': a list in this one would split into several arguments
  string(REPLACE ";" "|" _args "${arg_ARGS}")
  string(REPLACE ";" "|" _expect "${arg_EXPECT}")
  set(_defs "-DEXE=$<TARGET_FILE:fdlink>" "-DARGS=${_args}" "-DRC=${arg_RC}"
            "-DEXPECT=${_expect}" "-DTEXT=${arg_TEXT}")
  if(DEFINED arg_STDERR)
    list(APPEND _defs "-DSTDERR=${arg_STDERR}")
  endif()
  if(DEFINED arg_STDOUT)
    list(APPEND _defs "-DSTDOUT=${arg_STDOUT}")
  endif()
  add_test(NAME cli_${name} COMMAND ${CMAKE_COMMAND} ${_defs}
           -P ${PROJECT_SOURCE_DIR}/tests/cli/check_doctor.cmake)
  set_tests_properties(cli_${name} PROPERTIES LABELS cli ENVIRONMENT "${arg_ENV}")
endfunction()

# No driver: the GPU verdict is skipped, a finding, not an error (issue 40: exit 0, nothing on
# stderr) ...
fdlink_doctor_test(doctor_no_driver RC 0 ${_nogpu} ARGS doctor --json STDERR ""
  EXPECT usable=ON driver/usable=OFF driver/path:type=NULL driver/version:type=NULL gpus:type=ARRAY
         environment/FDLINK_LIBCUDA=/nonexistent/libcuda.so.1
         "verdicts/-1/capability=load and launch" verdicts/-1/state=skipped
         "verdicts/0/capability=link for sm_90" verdicts/0/state=ok
         "checks/0/name=ptx isa" checks/0/state=skipped
         libraries/nvjitlink/usable=ON)
# ... unless --gpu says that one is expected here (exit 1, one line saying why)
fdlink_doctor_test(doctor_no_driver_gpu_expected RC 1 ${_nogpu} ARGS doctor --json --gpu
  STDERR "^fdlink: error: load and launch: skipped: no GPU: cannot load /nonexistent/libcuda.so.1[^\n]*\n$"
  EXPECT usable=OFF verdicts/-1/state=skipped)
fdlink_doctor_test(doctor_no_driver_no_gpu RC 0 ${_nogpu} ARGS doctor --json --no-gpu STDERR ""
  EXPECT usable=ON verdicts/-1/state=skipped)
# the text report lists only the variables the user set: not FDLINK_PROBE_LIBS=1, which doctor
# sets itself (issue 40)
fdlink_doctor_test(doctor_no_driver_text RC 0 ${_nogpu} ARGS doctor TEXT
  STDOUT "\ndriver +not usable: cannot load /nonexistent/libcuda.so.1[^\n]*\ngpu +none: .*\n +FDLINK_LIBCUDA=/nonexistent/libcuda.so.1\n\nchecks:.*\nverdicts:\n  ok +link for sm_90: nvJitLink [0-9.]+\n.*  skipped +load and launch: no GPU: "
  STDERR "")
fdlink_doctor_test(doctor_probe_libs_set_by_the_user RC 0 ${_nogpu} FDLINK_PROBE_LIBS=1
  ARGS doctor TEXT STDOUT "\n +FDLINK_LIBCUDA=/nonexistent/libcuda.so.1\n +FDLINK_PROBE_LIBS=1\n")
# names and values with quotes, backslashes and control characters still give valid JSON
# (base/src/json.h), and the toolkit's include folders come in nvcc's order (nvcc.profile)
fdlink_doctor_test(doctor_hostile_environment RC 0
  ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1 "FDLINK_A\"B=1" "FDLINK_C=x\\y\tz"
  ARGS doctor --json --no-gpu
  EXPECT "environment/FDLINK_A\"B=1" "environment/FDLINK_C=x\\y\tz"
         toolkit/include_dirs:type=ARRAY)
fdlink_doctor_test(doctor_extra_arch RC 0 ${_nogpu} ARGS doctor --json --no-gpu --arch sm_80
  EXPECT "verdicts/0/capability=link for sm_80" verdicts/0/state=ok)
fdlink_doctor_test(doctor_bad_arch RC 2 ARGS doctor --arch compute_80 TEXT
  STDERR "^fdlink: error: option --arch needs an architecture \\(sm_NN\\)")
fdlink_doctor_test(doctor_unknown_option RC 2 ARGS doctor --verbose TEXT
  STDERR "^fdlink: error: unknown option '--verbose'")
# The mock driver: one GPU, everything usable
fdlink_doctor_test(doctor_mock RC 0 ${_mock} ARGS doctor --json STDERR ""
  EXPECT usable=ON driver/usable=ON driver/version=13.0 gpus/0/arch=sm_90 gpus/0/selected=ON
         "gpus/0/name=Mock H100 (fdlink tests)" checks/0/state=ok
         "verdicts/-1/capability=load and launch on GPU 0" verdicts/-1/state=ok)
# A driver older than the toolkit's PTX: the trap, with its fix, and exit 1
fdlink_doctor_test(doctor_mock_old_driver RC 1
  ENV FDLINK_LIBCUDA=$<TARGET_FILE:fdlink_mock_cuda> MOCK_CUDA_DRIVER_VERSION=12040
  ARGS doctor --json
  STDERR "^fdlink: error: ptx isa: nvcc of CUDA [0-9.]+ writes PTX ISA [0-9.]+, but the driver \\(CUDA 12.4\\) JITs PTX only up to ISA 8.4, [^\n]*fix: update the NVIDIA driver[^\n]*\n$"
  EXPECT usable=OFF driver/version=12.4 "checks/0/name=ptx isa" checks/0/state=problem)
# FDLINK_DEVICE naming a GPU that is not there
fdlink_doctor_test(doctor_mock_bad_device RC 1
  ENV FDLINK_LIBCUDA=$<TARGET_FILE:fdlink_mock_cuda> FDLINK_DEVICE=3
  ARGS doctor --json
  STDERR "^fdlink: error: FDLINK_DEVICE: [^\n]*\n$"
  EXPECT usable=OFF gpus/0/selected=OFF verdicts/-1/capability=FDLINK_DEVICE)

# a GPU number that is not there is an error (exit 1), not a skip
fdlink_cli_test(run_mock_no_such_device ${_mock} ARGS run ${_mv} --device 3 ${_mv_args})
fdlink_cli_test(link_culink_no_such_device ${_mock} ABSENT a.cubin
  ARGS link --backend=culink --device 3 -arch=sm_90 -o @OUT@/a.cubin link/mul.ptx link/caller.ptx)
fdlink_cli_test(run_mock_verbose ${_mock} ARGS run ${_mv} -v ${_mv_args})
# A toolkit of another major than nvJitLink (a fake CUDA 12.4 toolkit: just its cuda.h): both
# nvJitLink traps are found, each with its fix
set(_fake_cuda ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda_12.4)
file(WRITE ${_fake_cuda}/include/cuda.h "#define CUDA_VERSION 12040\n")
fdlink_doctor_test(doctor_toolkit_of_another_major RC 1
  ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1 FDLINK_CUDA_ROOT=${_fake_cuda}
  ARGS doctor --json --no-gpu
  STDERR "^fdlink: error: nvjitlink version: nvJitLink [0-9.]+ is of a newer major than the toolkit's headers \\(CUDA 12.4\\); fix: [^\n]*\nfdlink: error: lto-ir major: LTO-IR that nvcc of CUDA 12 writes \\(nvcc -dlto\\) cannot be linked by nvJitLink [0-9]+: [^\n]*\n$"
  EXPECT usable=OFF toolkit/version=12.4 toolkit/root=${_fake_cuda} toolkit/nvcc:type=NULL
         "checks/1/name=nvjitlink version" checks/1/state=problem
         "checks/2/name=lto-ir major" checks/2/state=problem)
# an asynchronous fault (reads far past the buffers) is reported by the run that caused it
fdlink_cli_test(run_mock_fault ${_mock}
  ARGS run ${_mv} --grid 262144 --block 256 f32[8] f32[8] f32[8] i32:67108864)
fdlink_cli_test(run_zero_block ARGS run ${_mv} --block 32,0 ${_mv_args})
# No nvJitLink: linking, CUDA C and LTO are not usable, each said once on stderr
fdlink_doctor_test(doctor_no_nvjitlink RC 1
  ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1 FDLINK_NVJITLINK=/nonexistent/libnvJitLink.so
  ARGS doctor --json --no-gpu
  STDERR "^fdlink: error: link for sm_90: cannot load /nonexistent/libnvJitLink.so[^\n]*\nfdlink: error: CUDA C at run time: [^\n]*\nfdlink: error: LTO: [^\n]*\n$"
  EXPECT usable=OFF libraries/nvjitlink/usable=OFF libraries/nvjitlink/path:type=NULL
         verdicts/0/state=no verdicts/1/state=no verdicts/2/state=no
         "checks/1/name=nvjitlink version" checks/1/state=skipped)

# float16 buffers and scalars, rounded to nearest even as a device conversion would. The
# kernel's pointers take buffers of any type; n = 0 leaves them as they were filled.
# run/iota8.f16: 0..7; run/h_X.f16: X as one float16 (2049 -> 2048 and 2051 -> 2052: ties to even)
fdlink_cli_test(run_mock_f16 ${_mock}
  ARGS run ${_mv} f16[8]=iota f16[1]=0.1 f16[1]=1e-7 i32:0 --expect 0=run/iota8.f16
       --expect 1=run/h_0.1.f16 --expect 2=run/h_1e-7.f16)
fdlink_cli_test(run_mock_f16_ties_to_even ${_mock}
  ARGS run ${_mv} f16[1]=2049 f16[1]=2051 f16[1]=-65504 i32:0 --expect 0=run/h_2049.f16
       --expect 1=run/h_2051.f16 --expect 2=run/h_-65504.f16)
fdlink_cli_test(run_f16_overflow ARGS run ${_mv} f32[8] f32[8] f32[8] f16:65520)
fdlink_cli_test(run_f16_scalar_size ${_nogpu} ARGS run ${_mv} f32[8] f32[8] f32[8] f16:1.5)

# doctor reports the link cache it would use (FDLINK_CACHE_DIR, FDLINK_CACHE=0) ...
fdlink_doctor_test(doctor_cache RC 0 ${_nogpu} ENV FDLINK_CACHE_DIR=/nonexistent/fdlink-cache
  ARGS doctor --json --no-gpu
  EXPECT cache/enabled=ON cache/dir=/nonexistent/fdlink-cache cache/entries:type=NUMBER
         cache/error:type=NULL)
fdlink_doctor_test(doctor_cache_off RC 0 ${_nogpu} ENV FDLINK_CACHE=0
  ARGS doctor --json --no-gpu EXPECT cache/enabled=OFF)
# ... and writes the ctest resource spec through the same code as `fdlink resource-spec`
fdlink_doctor_test(doctor_ctest_resource_spec RC 0 ${_nogpu}
  ARGS doctor --ctest-resource-spec --slots 2
  STDERR "^fdlink: note: [^\n]*the spec lists no GPUs[^\n]*\n$"
  EXPECT version/major=1 local/0/gpus:type=ARRAY)
fdlink_doctor_test(doctor_ctest_resource_spec_mock RC 0 ${_mock}
  ARGS doctor --ctest-resource-spec --slots 3
  EXPECT local/0/gpus/0/id=0 local/0/gpus/0/slots=3)
fdlink_doctor_test(doctor_ctest_resource_spec_not_first RC 2 ARGS doctor --json --ctest-resource-spec
  TEXT STDERR "must come first")

# run --map: a declared function mapped over buffers, the kernel generated (fdlink/gen.h).
# mul_f32_f32 over f32[8]=iota times a broadcast 2.5 (modes "as"; the mock runs that map).
set(_map --decl link/mul.decl link/mul.ptx --map mul_f32_f32)
set(_map_args f32[8] f32[8]=iota f32:2.5)
# the command line and the arguments against the declaration, before any GPU is needed
fdlink_cli_test(run_map_no_decl ARGS run link/mul.ptx --map mul_f32_f32 ${_map_args})
fdlink_cli_test(run_map_two_decls
  ARGS run --decl link/mul.decl --decl check/functions.decl link/mul.ptx --map mul_f32_f32
       ${_map_args})
fdlink_cli_test(run_map_unknown_function ARGS run --decl link/mul.decl link/mul.ptx --map mul
  ${_map_args})
fdlink_cli_test(run_map_void_function
  ARGS run --decl check/functions.decl check/conforming.ptx --map store_void f32[8] f32[8] f32:1)
fdlink_cli_test(run_map_and_kernel ARGS run ${_map} -k multiply_vectors ${_map_args})
fdlink_cli_test(run_map_with_block ARGS run ${_map} --block 8 ${_map_args})
fdlink_cli_test(run_map_result_type ARGS run ${_map} f64[8] f32[8]=iota f32:2.5)
fdlink_cli_test(run_map_result_scalar ARGS run ${_map} f32:0 f32[8]=iota f32:2.5)
fdlink_cli_test(run_map_too_few_args ARGS run ${_map} f32[8] f32[8]=iota)
fdlink_cli_test(run_map_too_many_args ARGS run ${_map} ${_map_args} f32:1)
fdlink_cli_test(run_map_scalar_type ARGS run ${_map} f32[8] f32[8]=iota f64:2.5)
fdlink_cli_test(run_map_buffer_type ARGS run ${_map} f32[8] i32[8]=iota f32:2.5)
fdlink_cli_test(run_map_struct ARGS run ${_map} f32[8] f32[8]=iota {f32:2.5})
fdlink_cli_test(run_map_buffer_shorter ARGS run ${_map} f32[8] f32[4]=iota f32:2.5)
# CPointer(float32): a buffer of float32 (its address), not of another type
fdlink_cli_test(run_map_pointer_type
  ARGS run --decl check/functions.decl check/conforming.ptx --map sum_reduce f32[1] f64[4] i32:4)
# bool parameters take u8 of 0 or 1, as scalars and as arrays
fdlink_cli_test(run_map_bool_value
  ARGS run --decl check/functions.decl check/conforming.ptx --map small_ints i32[2] u8:2 i8:1
       i16:1)
fdlink_cli_test(run_map_bool_array
  ARGS run --decl check/functions.decl check/conforming.ptx --map small_ints i32[3] u8[3]=iota
       i8:1 i16:1)
fdlink_cli_test(run_map_bool_array_ok ${_nogpu}
  ARGS run --decl check/functions.decl check/conforming.ptx --map small_ints i32[2] u8[2]=iota
       i8[2]=-3 i16:1)
# no GPU: a skip (exit 77), after the map has been generated, compiled and linked for -arch ...
fdlink_cli_test(run_map_no_gpu ${_nogpu} ARGS run -arch=sm_90 ${_map} ${_map_args})
fdlink_cli_test(run_map_pointer_no_gpu ${_nogpu}
  ARGS run -arch=sm_90 --decl check/functions.decl check/conforming.ptx --map sum_reduce f32[4]
       f32[100]=1 i32:100)
# ... so that code disagreeing with its declaration is an error even there
fdlink_cli_test(run_map_no_gpu_abi_error ${_nogpu}
  ARGS run -arch=sm_90 --decl link/mul.decl link/mul_wide.ptx --map mul_f32_f32 ${_map_args})
# on the mock driver: results written and verified, a mismatch, timed runs, a failing status
fdlink_cli_test(run_mock_map_expect ${_mock} PRESENT out.f32
  ARGS run ${_map} ${_map_args} --expect 0=run/mv_expected.f32 --out 0=@OUT@/out.f32)
fdlink_cli_test(run_mock_map_mismatch ${_mock}
  ARGS run ${_map} ${_map_args} --expect 0=run/mv_wrong.f32)
fdlink_cli_test(run_mock_map_status ${_mock}
  ARGS run --decl run/safe_sqrt.decl run/safe_sqrt.cu --map safe_sqrt f32[8]
       f32[8]@run/sqrt_in.f32)
fdlink_cli_test(run_mock_map_status_repeated ${_mock}
  ARGS run --decl run/safe_sqrt.decl run/safe_sqrt.cu --map safe_sqrt f32[8]
       f32[8]@run/sqrt_in.f32 --repeat 3)

# sym:NAME, the value of a module global as a kernel argument (cuda-samples' separate
# compilation: a device function pointer in a __device__ variable); the mock knows triple_ptr
set(_sym -arch=sm_90 run/fn_table.cu run/call_through.cu -k call_through --block 128)
fdlink_cli_test(run_mock_sym_function_pointer ${_mock}
  ARGS run ${_sym} i32[100] sym:triple_ptr i32:100 --expect 0=run/triple_expected.i32)
fdlink_cli_test(run_mock_sym_not_found ${_mock} ARGS run ${_sym} i32[100] sym:nope i32:100)
fdlink_cli_test(run_sym_bad_name ARGS run ${_sym} i32[100] sym:9x i32:100)
# a grid-syncing foreign function: launched cooperatively without asking; --cooperative refuses
# a grid that cannot be resident at once, saying the largest that can
set(_gs -arch=sm_90 --decl run/grid_sum.decl run/grid_sum.cu run/grid_sum_kernel.cu
        -k grid_sum_kernel --block 32)
fdlink_cli_test(run_mock_cooperative_too_large ${_mock}
  ARGS run ${_gs} --cooperative --grid 100000 u64[1] u32[1000]=iota u32:1000 u64[1])

# nvJitLink 13.5's cubin (tables at 4 mod 8, issue 40): run's parameter check reads its .nv.info
# (before: the ELF check refused the cubin and the check was skipped)
fdlink_cli_test(run_mock_nvjitlink135_parameter_count ${_mock}
  ARGS run link/nvjitlink135/twice_sm90.cubin -k twice f32[4]=iota)
