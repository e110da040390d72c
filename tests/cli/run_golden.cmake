# Run one CLI golden test: the exact exit code, stdout and stderr of a command, compared with a
# golden file. Variables: EXE, ARGS (list), WORKDIR, GOLDEN (file), UPDATE (regenerate when true,
# as does the environment variable FDLINK_UPDATE_GOLDEN=1), OUTDIR (a scratch folder, emptied
# first; arguments name it as @OUT@), ABSENT (files that must not exist afterwards, relative to
# OUTDIR: nothing half-written), PRESENT (files that must exist afterwards), SCRUB_LTOIR (replace
# the sizes of LTO-IR images by "N", in inspect's stdout and the warnings' stderr: nvcc records its working directory in LTO-IR, so they vary
# with where the tree was cloned).
if(OUTDIR)
  file(REMOVE_RECURSE "${OUTDIR}")
  file(MAKE_DIRECTORY "${OUTDIR}")
endif()
set(_args)
foreach(_a IN LISTS ARGS)
  string(REPLACE "@OUT@" "${OUTDIR}" _a "${_a}")
  list(APPEND _args "${_a}")
endforeach()
execute_process(COMMAND "${EXE}" ${_args}
  WORKING_DIRECTORY "${WORKDIR}"
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
string(REPLACE "${OUTDIR}" "@OUT@" _out "${_out}")
string(REPLACE "${OUTDIR}" "@OUT@" _err "${_err}")
if(SCRUB_LTOIR)
  string(REGEX REPLACE "(ltoir \\()[0-9]+( bytes)" "\\1N\\2" _out "${_out}")
  string(REGEX REPLACE "([0-9]+)( bytes of LTO-IR)" "N\\2" _err "${_err}")
endif()
set(_got "exit: ${_rc}\n--- stdout\n${_out}--- stderr\n${_err}")
foreach(_f IN LISTS ABSENT)
  file(GLOB _left "${OUTDIR}/${_f}*")
  if(_left)
    string(APPEND _got "--- left behind: ${_left}\n")
  endif()
endforeach()
foreach(_f IN LISTS PRESENT)
  if(NOT EXISTS "${OUTDIR}/${_f}")
    string(APPEND _got "--- missing output: ${_f}\n")
  endif()
endforeach()
if(UPDATE OR "$ENV{FDLINK_UPDATE_GOLDEN}")
  file(WRITE "${GOLDEN}" "${_got}")
  message(STATUS "updated ${GOLDEN}")
  return()
endif()
if(NOT EXISTS "${GOLDEN}")
  message(FATAL_ERROR "golden file ${GOLDEN} is missing; got:\n${_got}")
endif()
file(READ "${GOLDEN}" _want)
if(NOT _got STREQUAL _want)
  message(FATAL_ERROR "output differs from ${GOLDEN}\n=== want\n${_want}=== got\n${_got}")
endif()
