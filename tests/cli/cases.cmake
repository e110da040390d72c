# The golden cases. Paths are relative to tests/data; @OUT@ is the case's scratch folder.

# general
fdlink_cli_test(help ARGS --help)
fdlink_cli_test(version ARGS --version)
fdlink_cli_test(no_arguments)
fdlink_cli_test(unknown_command ARGS frobnicate)
fdlink_cli_test(unknown_global_option ARGS --frobnicate)
fdlink_cli_test(help_command ARGS help link)

# check: conforming inputs
fdlink_cli_test(check_help ARGS check --help)
fdlink_cli_test(check_conforming ARGS check --decl check/functions.decl check/conforming.ptx)
fdlink_cli_test(check_conforming_verbose
  ARGS check -v --decl check/functions.decl check/conforming.ptx check/caller.ptx)
# check: each way a definition can disagree with its declaration
fdlink_cli_test(check_wrong_width ARGS check --decl check/functions.decl check/wrong_width.ptx)
fdlink_cli_test(check_missing_return_pointer
  ARGS check --decl check/functions.decl check/missing_retptr.ptx)
fdlink_cli_test(check_c_void_function ARGS check --decl check/functions.decl check/c_void.ptx)
fdlink_cli_test(check_wrong_count ARGS check --decl check/functions.decl check/wrong_count.ptx)
fdlink_cli_test(check_missing_symbol
  ARGS check --decl check/functions.decl check/missing.ptx check/caller.ptx)
fdlink_cli_test(check_missing_symbol_allowed
  ARGS check --allow-undefined --decl check/functions.decl check/missing.ptx check/caller.ptx)
fdlink_cli_test(check_mangled ARGS check --decl check/functions.decl check/mangled.ptx)
fdlink_cli_test(check_stale_extern
  ARGS check --decl check/functions.decl check/conforming.ptx check/stale_caller.ptx)
fdlink_cli_test(check_stale_extern_not_checked
  ARGS check --no-externs --decl check/functions.decl check/conforming.ptx check/stale_caller.ptx)
# check: ABI-13 (a parameter read as the other class, float or integer) is looked for only in
# the PTX a link makes at -O0 from LTO-IR: a user's PTX is no evidence (nvcc -O3 folds a bit cast
# into the parameter load), so the wrong declarations give no warning here
fdlink_cli_test(check_classes_right ARGS check --decl classes/right.decl classes/classes_O3.ptx)
fdlink_cli_test(check_classes_wrong ARGS check --decl classes/wrong.decl classes/classes_O3.ptx)
fdlink_cli_test(check_classes_wrong_O0 ARGS check --decl classes/wrong.decl classes/classes_O0.ptx)
fdlink_cli_test(check_duplicate
  ARGS check --decl check/functions.decl check/conforming.ptx check/duplicate.ptx)
fdlink_cli_test(check_weak ARGS check --decl check/functions.decl check/weak.ptx)
fdlink_cli_test(check_kernel ARGS check --decl check/functions.decl check/entry.ptx)
# check: bad input and usage
fdlink_cli_test(check_bad_decl ARGS check --decl cli/bad.decl check/conforming.ptx)
fdlink_cli_test(check_missing_decl_file ARGS check --decl cli/nonexistent.decl check/conforming.ptx)
fdlink_cli_test(check_not_ptx ARGS check --decl check/functions.decl cli/notes.txt)
fdlink_cli_test(check_truncated_ptx ARGS check --decl check/functions.decl ptx/truncated.ptx)
fdlink_cli_test(check_directory ARGS check --decl check/functions.decl check)
fdlink_cli_test(check_no_decl ARGS check check/conforming.ptx)
fdlink_cli_test(check_no_inputs ARGS check --decl check/functions.decl)
fdlink_cli_test(check_unknown_option ARGS check --strict --decl check/functions.decl check/conforming.ptx)
fdlink_cli_test(check_decl_needs_value ARGS check check/conforming.ptx --decl)
# the command lines on the option tables (issue 42): a row's own checks, the operands
fdlink_cli_test(check_decl_twice
  ARGS check --decl check/functions.decl --decl=check/functions.decl check/conforming.ptx)
fdlink_cli_test(header_two_decl_files ARGS header check/functions.decl check/functions.decl)
fdlink_cli_test(header_output_empty ARGS header check/functions.decl -o=)
fdlink_cli_test(inspect_decl_needs_value ARGS inspect check/conforming.ptx --decl)
fdlink_cli_test(inspect_kind_needs_value ARGS inspect check/conforming.ptx --kind)
fdlink_cli_test(prewarm_two_manifests ARGS prewarm one.manifest two.manifest)
fdlink_cli_test(prewarm_bundle_empty ARGS prewarm --bundle= one.manifest)

# header
fdlink_cli_test(header_help ARGS header --help)
fdlink_cli_test(header_stdout ARGS header check/functions.decl)
fdlink_cli_test(header_bad_decl ARGS header cli/bad.decl -o @OUT@/bad.cuh ABSENT bad.cuh)
fdlink_cli_test(header_no_directory
  ARGS header check/functions.decl -o @OUT@/missing/dir/functions.cuh ABSENT missing)
fdlink_cli_test(header_no_file ARGS header)

include(${CMAKE_CURRENT_LIST_DIR}/cases_link.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/cases_embed.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/cases_diag.cmake)

# resource-spec: usage (the spec itself depends on the GPUs present: tests/cmake/resources.sh)
fdlink_cli_test(resource_spec_help ARGS resource-spec --help)
fdlink_cli_test(resource_spec_bad_slots ARGS resource-spec --slots 0)
fdlink_cli_test(resource_spec_slots_not_a_number ARGS resource-spec --slots=2x)
fdlink_cli_test(resource_spec_missing_slots ARGS resource-spec --slots)
fdlink_cli_test(resource_spec_unexpected_argument ARGS resource-spec gpus.json)
fdlink_cli_test(resource_spec_slots_twice ARGS resource-spec --slots 2 --slots=1025)
include(${CMAKE_CURRENT_LIST_DIR}/cases_cache.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/cases_run.cmake)
