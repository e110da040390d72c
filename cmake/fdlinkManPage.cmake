# Writes fdlink(1) from docs/fdlink.1.in and the built tool's own help texts (cmake -P):
#   cmake -DFDLINK=<fdlink> -DSRC=<fdlink.1.in> -DOUT=<fdlink.1> -DVERSION=<x.y.z> -P fdlinkManPage.cmake
# The COMMANDS section has one subsection per command that `fdlink --help` lists, holding
# `fdlink <command> --help` verbatim, so the page names every option the tool has. The date is
# SOURCE_DATE_EPOCH's when set (reproducible builds), else today's.
foreach(_v FDLINK SRC OUT VERSION)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "fdlinkManPage.cmake: -D${_v}=... is required")
  endif()
endforeach()

# roff: a backslash is \e; a line that starts with '.' or "'" would be a request: \& before it
function(_fdl_roff_escape out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(_fdl_help out)
  execute_process(COMMAND "${FDLINK}" ${ARGN} OUTPUT_VARIABLE _o ERROR_VARIABLE _e
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    string(REPLACE ";" " " _args "${ARGN}")
    message(FATAL_ERROR "fdlinkManPage.cmake: '${FDLINK} ${_args}' exited ${_rc}: ${_e}")
  endif()
  set(${out} "${_o}" PARENT_SCOPE)
endfunction()

_fdl_help(_top --help)
# the commands: the lines under "commands:" up to the next blank line, first word of each
string(REGEX MATCH "commands:\n([^\n]+\n)+" _block "${_top}")
if(NOT _block)
  message(FATAL_ERROR "fdlinkManPage.cmake: no 'commands:' list in '${FDLINK} --help'")
endif()
string(REGEX MATCHALL "\n  [a-z][a-z-]*" _names "${_block}")
set(_commands "")
foreach(_n IN LISTS _names)
  string(STRIP "${_n}" _n)
  _fdl_help(_h ${_n} --help)
  string(STRIP "${_h}" _h)
  _fdl_roff_escape(_h "${_h}")
  string(APPEND _commands ".SS ${_n}\n.nf\n${_h}\n.fi\n")
endforeach()

string(TIMESTAMP FDLINK_MAN_DATE "%Y-%m-%d" UTC)
set(FDLINK_MAN_VERSION "${VERSION}")
set(FDLINK_MAN_COMMANDS "${_commands}")
file(READ "${SRC}" _page)
string(CONFIGURE "${_page}" _page @ONLY)
# written whole, then renamed into place
file(WRITE "${OUT}.tmp" "${_page}")
file(RENAME "${OUT}.tmp" "${OUT}")
