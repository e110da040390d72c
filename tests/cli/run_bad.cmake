# Run one case of the catalogue of bad inputs (cases_bad.cmake): make its inputs fresh in a
# scratch folder (fdlink_badgen), note every file there (content, mode, link target), run the
# command there, and compare with the golden file the exit code, stdout and stderr, plus what the
# command changed: a file it created (a partial output, a stray temporary file) or an input it
# touched is written into the result, so the golden file shows it and the test fails.
# A failure must say so in one line of stderr (MULTILINE allows more).
# Variables: EXE, GEN, DATA, FIXTURES, SPECS (list), ARGS (list), GOLDEN, OUTDIR, AS_NOBODY (run
# as user nobody where this is root, so that modes are enforced), MULTILINE, ENVS (NAME=VALUE
# list, set for the command), STDOUT (a file standard output goes to, e.g. /dev/full).
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${OUTDIR}")
if(EXISTS "${OUTDIR}")
  execute_process(COMMAND chmod -R u+rwx "${OUTDIR}")
  file(REMOVE_RECURSE "${OUTDIR}")
endif()
file(MAKE_DIRECTORY "${OUTDIR}")
if(SPECS)
  execute_process(COMMAND "${GEN}" "${OUTDIR}" "${DATA}" "${FIXTURES}" ${SPECS}
    RESULT_VARIABLE _rc ERROR_VARIABLE _e)
  if(_rc EQUAL 77)
    message("${_e}")
    return()
  endif()
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "fdlink_badgen failed: ${_e}")
  endif()
endif()

# Every entry under OUTDIR as "path: what", sorted.
function(snapshot out)
  file(GLOB_RECURSE _all LIST_DIRECTORIES true RELATIVE "${OUTDIR}"
       "${OUTDIR}/*")
  list(SORT _all)
  set(_r)
  foreach(_f IN LISTS _all)
    set(_p "${OUTDIR}/${_f}")
    execute_process(COMMAND stat -c "%F" "${_p}" OUTPUT_VARIABLE _type
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(IS_SYMLINK "${_p}")
      file(READ_SYMLINK "${_p}" _t)
      set(_w "link to ${_t}")
    elseif(IS_DIRECTORY "${_p}")
      set(_w "folder")
    elseif(NOT _type MATCHES "^regular")
      # a FIFO, a socket or a device node: never read (it would block, or never end)
      execute_process(COMMAND stat -c "%a %t:%T" "${_p}" OUTPUT_VARIABLE _m
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      set(_w "${_type} ${_m}")
    else()
      execute_process(COMMAND stat -c "%a %s" "${_p}" OUTPUT_VARIABLE _m
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      file(SHA256 "${_p}" _h)
      set(_w "${_m} ${_h}")
    endif()
    list(APPEND _r "${_f}: ${_w}")
  endforeach()
  set(${out} "${_r}" PARENT_SCOPE)
endfunction()

snapshot(_before)
set(_cmd "${EXE}" ${ARGS})
if(AS_NOBODY)
  execute_process(COMMAND id -u OUTPUT_VARIABLE _uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_uid STREQUAL "0")
    find_program(_setpriv setpriv)
    if(NOT _setpriv)
      message("SKIP: running as root without setpriv, so file modes cannot be enforced")
      return()
    endif()
    set(_nobody "${_setpriv}" --reuid=65534 --regid=65534 --clear-groups --)
    # nobody must be able to reach the scratch folder and run fdlink (a tree under /root is not)
    execute_process(COMMAND ${_nobody} "${EXE}" --version WORKING_DIRECTORY "${OUTDIR}"
                    RESULT_VARIABLE _probe OUTPUT_QUIET ERROR_QUIET)
    if(NOT _probe EQUAL 0)
      message("SKIP: user nobody cannot run ${EXE} in ${OUTDIR}")
      return()
    endif()
    set(_cmd ${_nobody} ${_cmd})
  endif()
endif()
# the catalogue is about the CLI's handling of bad input, not the link cache (whose directory a
# user such as nobody may not be able to write, which would add a warning line)
set(ENV{FDLINK_CACHE} 0)
foreach(_kv IN LISTS ENVS)
  string(REGEX MATCH "^([^=]*)=(.*)$" _m "${_kv}")
  set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
endforeach()
# every case under a time limit: a hang is a failure, never a stuck test run
if(STDOUT)
  # standard output sent to a file (e.g. /dev/full): what fdlink says about it is on stderr
  execute_process(COMMAND ${_cmd} WORKING_DIRECTORY "${OUTDIR}" TIMEOUT 60
    OUTPUT_FILE "${STDOUT}" ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  set(_out "")
else()
  execute_process(COMMAND ${_cmd} WORKING_DIRECTORY "${OUTDIR}" TIMEOUT 60
    OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
endif()
snapshot(_after)

if(MULTILINE)
  # the linker's own log follows fdlink's line: its words differ between builds of one nvJitLink
  # release, so the golden keeps fdlink's line up to where the log starts, and that a log follows
  string(REGEX REPLACE "^([^\n]*(link failed|rejected the input): )[^\n]*\n.*$"
         "\\1<the linker's log>\n<the linker's log, whole>\n" _err "${_err}")
endif()
# the version skew's line names the nvJitLink of this machine, its release and its path (issue 40)
string(REGEX REPLACE "cannot be linked by nvJitLink [0-9.]+ \\([^)]*\\)"
       "cannot be linked by nvJitLink <release> (<its path>)" _err "${_err}")
set(_got "exit: ${_rc}\n--- stdout\n${_out}--- stderr\n${_err}")
if(NOT _rc EQUAL 0 AND NOT MULTILINE)
  string(REGEX MATCHALL "\n" _lines "${_err}")
  list(LENGTH _lines _n)
  if(NOT _n EQUAL 1)
    string(APPEND _got "--- stderr has ${_n} lines, not one\n")
  endif()
endif()
foreach(_e IN LISTS _after)
  if(NOT _e IN_LIST _before)
    string(APPEND _got "--- new or changed: ${_e}\n")
  endif()
endforeach()
foreach(_e IN LISTS _before)
  if(NOT _e IN_LIST _after)
    string(APPEND _got "--- gone or changed: ${_e}\n")
  endif()
endforeach()
if("$ENV{FDLINK_UPDATE_GOLDEN}")
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
