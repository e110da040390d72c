# fdlink CMake functions: device libraries compiled, checked and linked ahead of time, embedded in
# programs, tested with ctest. Included by fdlinkConfig.cmake (installed package) and by the fdlink
# source tree (add_subdirectory). They need the target fdlink::cli, and nvcc where device code is
# compiled (found then: the package itself needs no CUDA toolkit).
#
# Every function parses its arguments with cmake_parse_arguments(PARSE_ARGV), touches only the
# targets it is given or creates, and sets no global state.

include_guard(GLOBAL)

# Where the artifacts of a device library go.
function(_fdlink_outdir name out)
  set(${out} "${CMAKE_CURRENT_BINARY_DIR}/fdlink/${name}" PARENT_SCOPE)
endfunction()

# The compiler launcher (ccache, sccache: a command and its arguments) that wraps nvcc's
# compilations: FDLINK_COMPILER_LAUNCHER when defined (empty: none), else
# CMAKE_CUDA_COMPILER_LAUNCHER, else the environment variable of that name.
function(_fdlink_launcher out)
  if(DEFINED FDLINK_COMPILER_LAUNCHER)
    set(l "${FDLINK_COMPILER_LAUNCHER}")
  elseif(DEFINED CMAKE_CUDA_COMPILER_LAUNCHER)
    set(l "${CMAKE_CUDA_COMPILER_LAUNCHER}")
  else()
    set(l "$ENV{CMAKE_CUDA_COMPILER_LAUNCHER}")
  endif()
  set(${out} "${l}" PARENT_SCOPE)
endfunction()

# The CUDA compiler, taken as CMake's CUDA language takes it: CMAKE_CUDA_COMPILER (set with -D or
# by enable_language(CUDA)), else the environment variable CUDACXX, else the toolkit's nvcc
# (find_package(CUDAToolkit), asked only here: find_package(fdlink) needs no toolkit).
function(_fdlink_nvcc fn out)
  set(c "${CMAKE_CUDA_COMPILER}")
  if(NOT c AND DEFINED ENV{CUDACXX})
    set(c "$ENV{CUDACXX}")
  endif()
  if(c)
    if(NOT IS_ABSOLUTE "${c}")
      find_program(p NAMES "${c}" NO_CACHE)
      if(NOT p)
        message(FATAL_ERROR "${fn}: the CUDA compiler '${c}' (CMAKE_CUDA_COMPILER or CUDACXX) was not found")
      endif()
      set(c "${p}")
    endif()
    set(${out} "${c}" PARENT_SCOPE)
    return()
  endif()
  if(NOT CUDAToolkit_NVCC_EXECUTABLE)
    find_package(CUDAToolkit QUIET)
  endif()
  if(NOT CUDAToolkit_NVCC_EXECUTABLE)
    message(FATAL_ERROR "${fn}: device code needs the CUDA toolkit's nvcc, and none was found "
      "(install the CUDA toolkit, or point CUDAToolkit_ROOT or CMAKE_CUDA_COMPILER at it)")
  endif()
  set(${out} "${CUDAToolkit_NVCC_EXECUTABLE}" PARENT_SCOPE)
endfunction()

# The flags CMake's CUDA language would give nvcc: -ccbin for CMAKE_CUDA_HOST_COMPILER (else the
# environment variable CUDAHOSTCXX), CMAKE_CUDA_FLAGS (else CUDAFLAGS) and, per configuration,
# CMAKE_CUDA_FLAGS_<CONFIG> (as generator expressions, for single- and multi-config generators).
function(_fdlink_cuda_flags out)
  set(flags)
  set(host "${CMAKE_CUDA_HOST_COMPILER}")
  if(NOT host AND DEFINED ENV{CUDAHOSTCXX})
    set(host "$ENV{CUDAHOSTCXX}")
  endif()
  if(host)
    list(APPEND flags -ccbin "${host}")
  endif()
  if(DEFINED CMAKE_CUDA_FLAGS)
    set(f "${CMAKE_CUDA_FLAGS}")
  else()
    set(f "$ENV{CUDAFLAGS}")
  endif()
  separate_arguments(f UNIX_COMMAND "${f}")
  list(APPEND flags ${f})
  set(configs ${CMAKE_CONFIGURATION_TYPES} ${CMAKE_BUILD_TYPE} Debug Release RelWithDebInfo MinSizeRel)
  list(REMOVE_DUPLICATES configs)
  foreach(config IN LISTS configs)
    string(TOUPPER "${config}" c)
    if(NOT CMAKE_CUDA_FLAGS_${c})
      continue()
    endif()
    separate_arguments(f UNIX_COMMAND "${CMAKE_CUDA_FLAGS_${c}}")
    foreach(x IN LISTS f)
      string(REPLACE ">" "$<ANGLE-R>" x "${x}")
      list(APPEND flags "$<$<CONFIG:${config}>:${x}>")
    endforeach()
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# The real architectures nvcc compiles for (nvcc --list-gpu-code), oldest first.
function(_fdlink_nvcc_archs fn nvcc out)
  execute_process(COMMAND "${nvcc}" --list-gpu-code OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  string(REGEX MATCHALL "sm_[0-9]+[af]?" codes "${o}")
  set(nums)
  foreach(code IN LISTS codes)
    if(code MATCHES "^sm_([0-9]+)$") # all and all-major leave out arch-specific (a, f) targets
      list(APPEND nums ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(NOT rc EQUAL 0 OR NOT nums)
    message(FATAL_ERROR "${fn}: '${nvcc} --list-gpu-code' listed no architectures (${rc}): ${e}")
  endif()
  list(SORT nums COMPARE NATURAL)
  set(${out} ${nums} PARENT_SCOPE)
endfunction()

#[[ Architectures as CMAKE_CUDA_ARCHITECTURES spells them, resolved to a list of entries NN (real
and virtual code), NN-real (real only) and NN-virtual (virtual only), NN possibly ending in a or f:
  spec empty: FDLINK_ARCHITECTURES, else CMAKE_CUDA_ARCHITECTURES, else $ENV{CUDAARCHS}, else 90;
  native: real code for each GPU of this machine (CMAKE_CUDA_ARCHITECTURES_NATIVE when CMake has
    detected them, else nvcc's __nvcc_device_query), an error when there is none;
  all, all-major: real code for each architecture nvcc supports (each major one), plain for the
    newest (so that it carries PTX for later GPUs);
  OFF (or another false constant): nvcc's default, its oldest architecture. ]]
function(_fdlink_architectures fn spec nvcc out)
  if(NOT spec)
    if(FDLINK_ARCHITECTURES)
      set(spec ${FDLINK_ARCHITECTURES})
    elseif(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(spec ${CMAKE_CUDA_ARCHITECTURES})
      if(NOT spec) # OFF: nvcc's default
        set(spec OFF)
      endif()
    elseif(NOT "$ENV{CUDAARCHS}" STREQUAL "")
      set(spec $ENV{CUDAARCHS})
    else()
      set(spec 90)
    endif()
  endif()
  set(entries)
  foreach(a IN LISTS spec)
    if(a STREQUAL "native")
      if(DEFINED CMAKE_CUDA_ARCHITECTURES_NATIVE)
        set(o "CMake's CUDA language detected none")
        set(found ${CMAKE_CUDA_ARCHITECTURES_NATIVE})
        list(TRANSFORM found REPLACE "-real$" "")
      else()
        get_filename_component(bindir "${nvcc}" DIRECTORY)
        find_program(query __nvcc_device_query HINTS "${bindir}" "${CUDAToolkit_BIN_DIR}" NO_CACHE)
        set(o "__nvcc_device_query not found")
        set(found)
        if(query)
          execute_process(COMMAND "${query}" OUTPUT_VARIABLE o ERROR_VARIABLE o RESULT_VARIABLE rc)
          if(rc EQUAL 0)
            string(REGEX MATCHALL "[0-9]+" found "${o}")
          endif()
        endif()
      endif()
      if(NOT found)
        string(STRIP "${o}" o)
        message(FATAL_ERROR "${fn}: ARCHITECTURES native, but no GPU was detected (${o})")
      endif()
      list(REMOVE_DUPLICATES found)
      list(TRANSFORM found APPEND "-real")
      list(APPEND entries ${found})
    elseif(a STREQUAL "all" OR a STREQUAL "all-major")
      _fdlink_nvcc_archs("${fn}" "${nvcc}" nums)
      if(a STREQUAL "all-major")
        list(FILTER nums INCLUDE REGEX "0$")
      endif()
      list(POP_BACK nums newest)
      list(TRANSFORM nums APPEND "-real")
      list(APPEND entries ${nums} ${newest})
    elseif(NOT a)
      _fdlink_nvcc_archs("${fn}" "${nvcc}" nums)
      list(GET nums 0 oldest)
      list(APPEND entries ${oldest})
    elseif(a MATCHES "^[0-9]+[af]?(-real|-virtual)?$")
      list(APPEND entries ${a})
    else()
      message(FATAL_ERROR "${fn}: bad architecture '${a}' (expected e.g. 90, 80-real, 90-virtual, "
                          "native, all or all-major, as in CMAKE_CUDA_ARCHITECTURES)")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES entries)
  set(${out} ${entries} PARENT_SCOPE)
endfunction()

# nvcc's -gencode options for architecture entries (NN, NN-real, NN-virtual).
function(_fdlink_gencode entries out)
  set(g)
  foreach(e IN LISTS entries)
    string(REGEX REPLACE "-(real|virtual)$" "" n "${e}")
    if(e MATCHES "-real$")
      list(APPEND g "-gencode=arch=compute_${n},code=sm_${n}")
    elseif(e MATCHES "-virtual$")
      list(APPEND g "-gencode=arch=compute_${n},code=compute_${n}")
    else()
      list(APPEND g "-gencode=arch=compute_${n},code=[sm_${n},compute_${n}]")
    endif()
  endforeach()
  set(${out} ${g} PARENT_SCOPE)
endfunction()

# One nvcc command of fdlink_add_device_library: OUTPUT, a comment, then nvcc's arguments; uses
# the caller's deps and appends to its all_outputs. Each writes a depfile (-MD -MF)
# naming every header the source includes, so that touching one rebuilds the output.
macro(_fdlink_nvcc_command out comment)
  add_custom_command(OUTPUT "${out}"
    COMMAND ${ARGN} -MD -MF "${out}.d" -MT "${out}"
    DEPENDS ${deps} DEPFILE "${out}.d"
    COMMENT "${comment}" VERBATIM COMMAND_EXPAND_LISTS)
  list(APPEND all_outputs "${out}")
endmacro()

#[=======================================================================[
fdlink_add_device_library(<name>
    SOURCES <file.cu>...
    [DECLARATIONS <file.decl>]                        (none: kernels only, nothing to check)
    [ALLOW_UNDEFINED]                                 (callers: declared functions may be only referenced)
    [FORMATS ptx cubin fatbin ltoir object library]   (default: ptx)
    [ARCHITECTURES 80-real 90 ...]                    (as CMAKE_CUDA_ARCHITECTURES; default below)
    [INCLUDE_DIRECTORIES <dir>...]
    [COMPILE_OPTIONS <nvcc option>...])

Compiles the sources ahead of time into every requested format for every architecture, with the
prototypes header generated from DECLARATIONS force-included (a definition that disagrees with its
declaration does not compile), and runs `fdlink check` on the PTX at build time (a signature
mismatch fails the build).

<name> is an OBJECT library holding the sources, so that it takes usage requirements like any
target: target_link_libraries(<name> PRIVATE CCCL::CCCL), target_include_directories,
target_compile_definitions and target_compile_options reach every nvcc command (options inside
$<COMPILE_LANGUAGE:...> only reach CMake's own compile, below). When the calling project has
enabled CUDA, CMake's CUDA language also compiles the sources to PTX for the first architecture
(CUDA_PTX_COMPILATION), so that they appear in compile_commands.json and IDEs with their real
flags and the prototypes header. The artifacts are made by the custom target <name>_artifacts
(part of ALL), which <name> depends on.

ARCHITECTURES takes CMAKE_CUDA_ARCHITECTURES's forms and meaning: NN (real and virtual code),
NN-real, NN-virtual, native, all, all-major. Without it: FDLINK_ARCHITECTURES, else
CMAKE_CUDA_ARCHITECTURES, else the environment variable CUDAARCHS, else 90. PTX and LTO-IR are
built for every architecture, cubins for those with real code; fatbins and objects carry what
each entry asks for. nvcc is CMAKE_CUDA_COMPILER (else CUDACXX, else the toolkit's); every
command gets -ccbin CMAKE_CUDA_HOST_COMPILER (else CUDAHOSTCXX), CMAKE_CUDA_FLAGS (else
CUDAFLAGS) and CMAKE_CUDA_FLAGS_<CONFIG>, then the target's usage requirements, then
INCLUDE_DIRECTORIES and COMPILE_OPTIONS. Every nvcc command writes a depfile, so that a header a
source includes, directly or not, rebuilds what it is part of.

The target's properties name the artifacts:
  FDLINK_HEADER, FDLINK_HEADER_DIR, FDLINK_DECLARATIONS, FDLINK_ARCHITECTURES (numbers),
  FDLINK_ARCHITECTURE_ENTRIES (as resolved: 80-real;90), FDLINK_FORMATS,
  FDLINK_<FORMAT>_<arch> (e.g. FDLINK_PTX_90, FDLINK_CUBIN_90, FDLINK_LTOIR_90: lists of files),
  FDLINK_FATBIN, FDLINK_OBJECT, FDLINK_LIBRARY (files holding every architecture).
A compiler launcher wraps every nvcc compilation (not the `nvcc -lib` archive step), so that ccache
or sccache serve repeated builds from their cache: FDLINK_COMPILER_LAUNCHER when defined (empty:
none), else CMAKE_CUDA_COMPILER_LAUNCHER (variable, then environment), e.g.
-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache. Every compilation passes nvcc `-c` (which changes none of
its outputs) so that the launcher sees it as one.
#]=======================================================================]
function(fdlink_add_device_library name)
  set(fn "fdlink_add_device_library(${name})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "ALLOW_UNDEFINED" "DECLARATIONS"
    "SOURCES;FORMATS;ARCHITECTURES;INCLUDE_DIRECTORIES;COMPILE_OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${fn}: SOURCES is required")
  endif()
  if(NOT arg_FORMATS)
    set(arg_FORMATS ptx)
  endif()
  foreach(f IN LISTS arg_FORMATS)
    if(NOT f MATCHES "^(ptx|cubin|fatbin|ltoir|object|library)$")
      message(FATAL_ERROR "${fn}: unknown format '${f}' (expected ptx cubin fatbin ltoir object library)")
    endif()
  endforeach()

  _fdlink_nvcc("${fn}" nvcc)
  _fdlink_architectures("${fn}" "${arg_ARCHITECTURES}" "${nvcc}" entries)
  set(archs)      # every architecture number, in order
  set(real_archs) # those with real code (cubins)
  foreach(e IN LISTS entries)
    string(REGEX REPLACE "-(real|virtual)$" "" n "${e}")
    list(APPEND archs ${n})
    if(NOT e MATCHES "-virtual$")
      list(APPEND real_archs ${n})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES archs)
  _fdlink_gencode("${entries}" gencode)
  _fdlink_cuda_flags(user_flags)
  _fdlink_outdir(${name} dir)
  _fdlink_launcher(launcher)
  # nvcc as the compilations run it: behind the launcher, with -c (a compilation, to ccache; with
  # -ptx, -cubin, -ltoir or -fatbin too, nvcc writes that output, byte for byte as without -c)
  set(cc ${launcher} "${nvcc}" -c)
  file(MAKE_DIRECTORY "${dir}/include")

  # The target users see and give usage requirements to. fdlink's own headers (fdlink/device.h)
  # come from fdlink::fdlink's include directories.
  set(sources)
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE)
    list(APPEND sources "${src}")
  endforeach()
  add_library(${name} OBJECT ${sources})
  target_link_libraries(${name} PRIVATE fdlink::fdlink)
  target_include_directories(${name} PRIVATE "${dir}/include")
  foreach(inc IN LISTS arg_INCLUDE_DIRECTORIES)
    get_filename_component(inc "${inc}" ABSOLUTE)
    target_include_directories(${name} PRIVATE "${inc}")
  endforeach()
  get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  list(FILTER langs INCLUDE REGEX "^(CUDA|CXX|C)$")
  list(GET langs 0 linker_language)
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE ${linker_language})
  set(cmake_cuda OFF)
  if("CUDA" IN_LIST langs)
    set(cmake_cuda ON)
    list(GET entries 0 first)
    string(REGEX REPLACE "-(real|virtual)$" "" first "${first}")
    set_target_properties(${name} PROPERTIES CUDA_PTX_COMPILATION ON
      CUDA_ARCHITECTURES ${first}-virtual CUDA_SEPARABLE_COMPILATION ON)
  endif()
  target_compile_options(${name} PRIVATE ${arg_COMPILE_OPTIONS})

  # The target's usage requirements, as nvcc arguments (empty ones vanish: COMMAND_EXPAND_LISTS).
  set(p "$<TARGET_PROPERTY:${name},INCLUDE_DIRECTORIES>")
  set(usage "$<$<BOOL:${p}>:-I$<JOIN:$<REMOVE_DUPLICATES:${p}>,$<SEMICOLON>-I>>")
  set(p "$<TARGET_PROPERTY:${name},COMPILE_DEFINITIONS>")
  list(APPEND usage "$<$<BOOL:${p}>:-D$<JOIN:${p},$<SEMICOLON>-D>>")
  list(APPEND usage "$<TARGET_PROPERTY:${name},COMPILE_OPTIONS>")

  set(decl)
  set(header)
  set(common ${user_flags} -rdc=true ${usage})
  if(arg_DECLARATIONS)
    get_filename_component(decl "${arg_DECLARATIONS}" ABSOLUTE)
    get_filename_component(decl_base "${decl}" NAME_WE)
    set(header "${dir}/include/${decl_base}.cuh")
    add_custom_command(OUTPUT "${header}"
      COMMAND fdlink::cli header "${decl}" -o "${header}"
      DEPENDS "${decl}" fdlink::cli
      COMMENT "fdlink header ${decl_base}.decl" VERBATIM)
    list(APPEND common -include "${header}")
    if(cmake_cuda)
      target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-include \"${header}\">")
    endif()
  endif()

  set(all_outputs)
  set(objects)
  set(fatbins)
  set(lib)

  foreach(src IN LISTS sources)
    get_filename_component(base "${src}" NAME_WE)
    set(deps "${src}" ${header})
    foreach(a IN LISTS archs)
      # PTX is always built: the conformance check reads it.
      set(ptx "${dir}/${base}.compute_${a}.ptx")
      _fdlink_nvcc_command("${ptx}" "nvcc -ptx ${base}.cu (compute_${a})"
        ${cc} -ptx -arch=compute_${a} ${common} -o "${ptx}" "${src}")
      list(APPEND ptx_${a} "${ptx}")
      if("cubin" IN_LIST arg_FORMATS AND a IN_LIST real_archs)
        set(cubin "${dir}/${base}.sm_${a}.cubin")
        _fdlink_nvcc_command("${cubin}" "nvcc -cubin ${base}.cu (sm_${a})"
          ${cc} -cubin -arch=sm_${a} ${common} -o "${cubin}" "${src}")
        list(APPEND cubin_${a} "${cubin}")
      endif()
      if("ltoir" IN_LIST arg_FORMATS)
        set(ltoir "${dir}/${base}.sm_${a}.ltoir")
        _fdlink_nvcc_command("${ltoir}" "nvcc -ltoir ${base}.cu (lto_${a})"
          ${cc} -ltoir -dlto -arch=lto_${a} ${common} -o "${ltoir}" "${src}")
        list(APPEND ltoir_${a} "${ltoir}")
      endif()
    endforeach()
    if("fatbin" IN_LIST arg_FORMATS)
      set(fatbin "${dir}/${base}.fatbin")
      _fdlink_nvcc_command("${fatbin}" "nvcc -fatbin ${base}.cu"
        ${cc} -fatbin ${gencode} ${common} -o "${fatbin}" "${src}")
      list(APPEND fatbins "${fatbin}")
    endif()
    if("object" IN_LIST arg_FORMATS OR "library" IN_LIST arg_FORMATS)
      set(obj "${dir}/${base}.o")
      _fdlink_nvcc_command("${obj}" "nvcc -dc ${base}.cu"
        ${launcher} "${nvcc}" -dc ${gencode} ${common} -Xcompiler=-fPIC -o "${obj}" "${src}")
      list(APPEND objects "${obj}")
    endif()
  endforeach()

  if("library" IN_LIST arg_FORMATS)
    set(lib "${dir}/lib${name}.a")
    add_custom_command(OUTPUT "${lib}"
      COMMAND "${nvcc}" -lib -o "${lib}" ${objects}
      DEPENDS ${objects} COMMENT "nvcc -lib lib${name}.a" VERBATIM)
    list(APPEND all_outputs "${lib}")
  endif()

  # The conformance check: one per architecture, over all the sources' PTX together.
  set(stamps)
  set(check_opts)
  if(arg_ALLOW_UNDEFINED)
    set(check_opts --allow-undefined)
  endif()
  foreach(a IN LISTS archs)
    if(NOT decl)
      break()
    endif()
    set(stamp "${dir}/check_${a}.stamp")
    add_custom_command(OUTPUT "${stamp}"
      COMMAND fdlink::cli check ${check_opts} --decl "${decl}" ${ptx_${a}}
      COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
      DEPENDS "${decl}" ${ptx_${a}} fdlink::cli
      COMMENT "fdlink check ${decl_base}.decl (compute_${a})" VERBATIM)
    list(APPEND stamps "${stamp}")
  endforeach()

  add_custom_target(${name}_artifacts ALL DEPENDS ${all_outputs} ${stamps} ${header})
  add_dependencies(${name} ${name}_artifacts)
  set_target_properties(${name} PROPERTIES
    FDLINK_HEADER "${header}"
    FDLINK_HEADER_DIR "${dir}/include"
    FDLINK_DECLARATIONS "${decl}"
    FDLINK_ARCHITECTURES "${archs}"
    FDLINK_ARCHITECTURE_ENTRIES "${entries}"
    FDLINK_FORMATS "${arg_FORMATS}"
    FDLINK_FATBIN "${fatbins}"
    FDLINK_OBJECT "${objects}"
    FDLINK_LIBRARY "${lib}")
  foreach(a IN LISTS archs)
    set_target_properties(${name} PROPERTIES
      FDLINK_PTX_${a} "${ptx_${a}}"
      FDLINK_CUBIN_${a} "${cubin_${a}}"
      FDLINK_LTOIR_${a} "${ltoir_${a}}")
  endforeach()
endfunction()

# The files a fdlink_link input contributes for architecture number <a>, the dependencies, and the
# declarations of fdlink device libraries among them (in decl_files, extended).
#   fdlink device library: its LTO-IR for <a> (unless NO_LTO), else its static library, objects,
#     fatbins (when built for <a>), cubins, PTX (of <a>, else of the newest older architecture);
#   a CUDA target of the project: an OBJECT library's objects ($<TARGET_OBJECTS>: PTX with
#     CUDA_PTX_COMPILATION, relocatable objects with CUDA_SEPARABLE_COMPILATION), a STATIC
#     library's archive (fdlink link reads each by its content);
#   anything else: a file.
function(_fdlink_link_input fn in a no_lto out_files out_deps decl_files_var)
  set(decl_files ${${decl_files_var}})
  if(NOT TARGET ${in})
    get_filename_component(in "${in}" ABSOLUTE)
    set(${out_files} "${in}" PARENT_SCOPE)
    set(${out_deps} "${in}" PARENT_SCOPE)
    return()
  endif()
  get_target_property(in_archs ${in} FDLINK_ARCHITECTURES)
  if(NOT in_archs)
    get_target_property(type ${in} TYPE)
    if(type STREQUAL "OBJECT_LIBRARY")
      set(chosen "$<TARGET_OBJECTS:${in}>")
    elseif(type STREQUAL "STATIC_LIBRARY")
      set(chosen "$<TARGET_FILE:${in}>")
    else()
      message(FATAL_ERROR "${fn}: '${in}' is a ${type}; expected a device library of "
        "fdlink_add_device_library, an OBJECT library (CUDA_PTX_COMPILATION or "
        "CUDA_SEPARABLE_COMPILATION) or a STATIC library of relocatable device code")
    endif()
    set(${out_files} "${chosen}" PARENT_SCOPE)
    set(${out_deps} "${chosen}" ${in} PARENT_SCOPE)
    return()
  endif()
  get_target_property(ltoir ${in} FDLINK_LTOIR_${a})
  get_target_property(cubin ${in} FDLINK_CUBIN_${a})
  get_target_property(ptx ${in} FDLINK_PTX_${a})
  get_target_property(in_decl ${in} FDLINK_DECLARATIONS)
  if(NOT ptx)
    # PTX of an older virtual architecture links for a newer one: take the newest not above.
    string(REGEX REPLACE "[af]$" "" a_num "${a}")
    set(best -1)
    foreach(ia IN LISTS in_archs)
      string(REGEX REPLACE "[af]$" "" ia_num "${ia}")
      if(ia STREQUAL ia_num AND ia_num LESS_EQUAL a_num AND ia_num GREATER best)
        set(best ${ia_num})
      endif()
    endforeach()
    if(best GREATER -1)
      get_target_property(ptx ${in} FDLINK_PTX_${best})
    endif()
  endif()
  # containers holding every architecture of the library: usable when it was built for NN
  set(library)
  set(object)
  set(fatbin)
  if(a IN_LIST in_archs)
    get_target_property(library ${in} FDLINK_LIBRARY)
    get_target_property(object ${in} FDLINK_OBJECT)
    get_target_property(fatbin ${in} FDLINK_FATBIN)
  endif()
  if(NOT ltoir AND NOT cubin AND NOT ptx AND NOT library AND NOT object AND NOT fatbin)
    message(FATAL_ERROR "${fn}: '${in}' has no artifacts for sm_${a} "
                        "(is it a device library built for ARCHITECTURES ${a}?)")
  endif()
  if(ltoir AND NOT no_lto)
    set(chosen ${ltoir})
  elseif(library)
    set(chosen ${library})
  elseif(object)
    set(chosen ${object})
  elseif(fatbin)
    set(chosen ${fatbin})
  elseif(cubin)
    set(chosen ${cubin})
  else()
    set(chosen ${ptx})
  endif()
  if(in_decl AND NOT "${in_decl}" IN_LIST decl_files)
    list(APPEND decl_files "${in_decl}")
  endif()
  set(${out_files} ${chosen} PARENT_SCOPE)
  set(${out_deps} ${chosen} ${in} PARENT_SCOPE)
  set(${decl_files_var} ${decl_files} PARENT_SCOPE)
endfunction()

# One line of `fdlink prewarm`'s manifest <file> (fdlink_link's MANIFEST): the words of a link,
# each quoted, generator expressions kept; the file is written once the directory is done.
function(_fdlink_manifest_add file)
  set(words)
  foreach(w IN LISTS ARGN)
    if(w MATCHES "^\\$<")
      list(APPEND words "\"$<JOIN:${w},\" \">\"") # a list of files: a word each
    else()
      list(APPEND words "\"${w}\"")
    endif()
  endforeach()
  list(JOIN words " " line)
  get_property(lines GLOBAL PROPERTY "_FDLINK_MANIFEST_${file}")
  if(NOT lines)
    cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY \"${CMAKE_SOURCE_DIR}\" CALL _fdlink_manifest_write \"${file}\")")
  endif()
  set_property(GLOBAL APPEND PROPERTY "_FDLINK_MANIFEST_${file}" "${line}")
endfunction()

function(_fdlink_manifest_write file)
  get_property(lines GLOBAL PROPERTY "_FDLINK_MANIFEST_${file}")
  list(JOIN lines "\n" text)
  file(GENERATE OUTPUT "${file}" CONTENT "# fdlink prewarm manifest: the links of this build (fdlink_link MANIFEST)\n${text}\n")
endfunction()

#[=======================================================================[
fdlink_link(<name>
    INPUTS <device library targets | CUDA targets | files>...
    ARCH sm_NN | ARCHITECTURES <80-real 90 ...>
    OUTPUT <file.cubin | file.fatbin>
    [LTO | NO_LTO]
    [DECLARATIONS <file.decl>...]
    [OPTIONS <fdlink link option>...]
    [MANIFEST <file>])

Links ahead of time, at build time, with `fdlink link`. A device library target (made earlier by
fdlink_add_device_library) contributes, for the architecture NN, its LTO-IR when it has some
(unless NO_LTO), else its static library, else its objects, else its fatbins, else its cubins,
else its PTX (that of NN, else of the newest older architecture it was built for); its
declarations are checked unless DECLARATIONS overrides them. A CUDA target the project builds
itself is taken as it is: an OBJECT library with CUDA_PTX_COMPILATION (its PTX) or
CUDA_SEPARABLE_COMPILATION (its relocatable objects), or a STATIC library of such objects; give
DECLARATIONS to check them. Undefined symbols or ABI mismatches fail the build with the linker's
message.

ARCH sm_NN: OUTPUT is one cubin; the target's property FDLINK_CUBIN names it.
ARCHITECTURES (CMAKE_CUDA_ARCHITECTURES's forms, as in fdlink_add_device_library): OUTPUT is one
fatbin holding a linked cubin for each entry with real code (NN, NN-real) and the linked PTX
(`fdlink link --emit-ptx`, which needs every input in LTO-IR) for each entry with virtual code
(NN, NN-virtual), so that a later GPU JIT-compiles it; the driver picks the image that fits the
GPU when the fatbin is loaded. The property FDLINK_FATBIN names it. When the inputs are the same
for every architecture (files, the project's own CUDA targets: not device libraries, which
have code per architecture), one `fdlink link -arch=sm_80,sm_90,compute_90` makes the fatbin
itself, with no fatbinary: its links run side by side within the build's job slots, each cached.

MANIFEST <file>: every link this call makes is also a line of <file> (relative to the top build
folder), a manifest for `fdlink prewarm`, so that a deployment can warm its cache (or make a
bundle) ahead of time and run with FDLINK_REQUIRE_WARM=1; several fdlink_link calls may share one.
#]=======================================================================]
function(fdlink_link name)
  set(fn "fdlink_link(${name})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "LTO;NO_LTO" "ARCH;OUTPUT;MANIFEST" "INPUTS;DECLARATIONS;OPTIONS;ARCHITECTURES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_INPUTS OR NOT arg_OUTPUT OR (NOT arg_ARCH AND NOT arg_ARCHITECTURES))
    message(FATAL_ERROR "${fn}: INPUTS, ARCH (or ARCHITECTURES) and OUTPUT are required")
  endif()
  if(arg_ARCH AND arg_ARCHITECTURES)
    message(FATAL_ERROR "${fn}: ARCH and ARCHITECTURES exclude each other")
  endif()
  if(arg_LTO AND arg_NO_LTO)
    message(FATAL_ERROR "${fn}: LTO and NO_LTO exclude each other")
  endif()
  get_filename_component(output "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(lto)
  if(arg_LTO)
    set(lto --lto)
  elseif(arg_NO_LTO)
    set(lto --no-lto)
  endif()
  if(arg_ARCH)
    if(NOT arg_ARCH MATCHES "^sm_([0-9]+[af]?)$")
      message(FATAL_ERROR "${fn}: bad ARCH '${arg_ARCH}' (expected e.g. sm_90)")
    endif()
    set(entries "${CMAKE_MATCH_1}-real")
  else()
    # nvcc only for the forms that ask it (native, all, all-major, OFF): numbers need none
    set(nvcc)
    set(numbers_only TRUE)
    foreach(a IN LISTS arg_ARCHITECTURES)
      if(NOT a MATCHES "^[0-9]+[af]?(-real|-virtual)?$")
        set(numbers_only FALSE)
      endif()
    endforeach()
    if(NOT arg_ARCHITECTURES OR NOT numbers_only)
      _fdlink_nvcc("${fn}" nvcc)
    endif()
    _fdlink_architectures("${fn}" "${arg_ARCHITECTURES}" "${nvcc}" entries)
  endif()
  if(arg_MANIFEST)
    get_filename_component(manifest "${arg_MANIFEST}" ABSOLUTE BASE_DIR "${CMAKE_BINARY_DIR}")
  endif()

  set(decls)
  set(decl_deps)
  foreach(decl IN LISTS arg_DECLARATIONS)
    get_filename_component(decl "${decl}" ABSOLUTE)
    list(APPEND decls --decl "${decl}")
    list(APPEND decl_deps "${decl}")
  endforeach()
  _fdlink_outdir(${name} dir)
  file(MAKE_DIRECTORY "${dir}") # Makefiles generators make no output directories
  # Inputs that are the same for every architecture (files, the project's own CUDA targets):
  # one `fdlink link -arch=sm_80,sm_90,compute_90` makes the fatbin itself (its links side by
  # side within the build's job slots, each cached), with no fatbinary (issue 40).
  set(same TRUE)
  foreach(in IN LISTS arg_INPUTS)
    if(TARGET ${in})
      get_target_property(in_archs ${in} FDLINK_ARCHITECTURES)
      if(in_archs)
        set(same FALSE)
      endif()
    endif()
  endforeach()
  set(fat_archs)
  foreach(e IN LISTS entries)
    string(REGEX REPLACE "-(real|virtual)$" "" a "${e}")
    if(a MATCHES "[af]$")
      set(same FALSE) # arch-specific code goes through fatbinary, which knows its flags
    endif()
    if(NOT e MATCHES "-virtual$")
      list(APPEND fat_archs "sm_${a}")
    endif()
    if(NOT e MATCHES "-real$")
      list(APPEND fat_archs "compute_${a}")
    endif()
  endforeach()
  if(NOT arg_ARCH AND same)
    set(files)
    set(deps ${decl_deps})
    set(decl_files)
    foreach(in IN LISTS arg_INPUTS)
      _fdlink_link_input("${fn}" "${in}" "" "${arg_NO_LTO}" f d decl_files)
      list(APPEND files ${f})
      list(APPEND deps ${d})
    endforeach()
    list(JOIN fat_archs "," arch_list)
    add_custom_command(OUTPUT "${output}"
      COMMAND fdlink::cli link -arch=${arch_list} ${lto} ${decls} ${arg_OPTIONS} -o "${output}" ${files}
      DEPENDS ${deps} fdlink::cli
      COMMENT "fdlink link -arch=${arch_list} -> ${arg_OUTPUT}" VERBATIM COMMAND_EXPAND_LISTS)
    add_custom_target(${name} ALL DEPENDS "${output}")
    set_target_properties(${name} PROPERTIES FDLINK_FATBIN "${output}")
    if(arg_MANIFEST)
      _fdlink_manifest_add("${manifest}" -arch=${arch_list} ${lto} ${decls} ${arg_OPTIONS} -o "${output}" ${files})
    endif()
    return()
  endif()
  set(images)     # fatbinary's --image3 options
  set(image_files)
  foreach(e IN LISTS entries)
    string(REGEX REPLACE "-(real|virtual)$" "" a "${e}")
    set(files)
    set(deps ${decl_deps})
    set(decl_files)
    foreach(in IN LISTS arg_INPUTS)
      _fdlink_link_input("${fn}" "${in}" "${a}" "${arg_NO_LTO}" f d decl_files)
      list(APPEND files ${f})
      list(APPEND deps ${d})
    endforeach()
    set(arch_decls ${decls})
    if(NOT arg_DECLARATIONS)
      foreach(d IN LISTS decl_files)
        list(APPEND arch_decls --decl "${d}")
      endforeach()
    endif()
    if(arg_ARCH)
      set(cubin "${output}")
    else()
      get_filename_component(base "${output}" NAME_WE)
      set(cubin "${dir}/${base}.sm_${a}.cubin")
    endif()
    set(outputs "${cubin}")
    set(emit)
    if(NOT e MATCHES "-real$")
      set(ptx "${dir}/${base}.compute_${a}.ptx")
      set(emit "--emit-ptx=${ptx}")
      list(APPEND outputs "${ptx}")
      list(APPEND images "--image3=kind=ptx,sm=${a},file=${ptx}")
      list(APPEND image_files "${ptx}")
    endif()
    if(NOT e MATCHES "-virtual$" AND NOT arg_ARCH)
      list(APPEND images "--image3=kind=elf,sm=${a},file=${cubin}")
      list(APPEND image_files "${cubin}")
    endif()
    if(arg_MANIFEST)
      _fdlink_manifest_add("${manifest}" -arch=sm_${a} ${lto} ${arch_decls} ${arg_OPTIONS} ${emit} -o "${cubin}" ${files})
    endif()
    add_custom_command(OUTPUT ${outputs}
      COMMAND fdlink::cli link -arch=sm_${a} ${lto} ${arch_decls} ${arg_OPTIONS} ${emit} -o "${cubin}" ${files}
      DEPENDS ${deps} fdlink::cli
      COMMENT "fdlink link -arch=sm_${a} -> ${arg_OUTPUT}" VERBATIM COMMAND_EXPAND_LISTS)
  endforeach()
  if(arg_ARCH)
    add_custom_target(${name} ALL DEPENDS "${output}")
    set_target_properties(${name} PROPERTIES FDLINK_CUBIN "${output}")
    return()
  endif()
  if(NOT nvcc)
    _fdlink_nvcc("${fn}" nvcc) # fatbinary lies beside it
  endif()
  get_filename_component(bindir "${nvcc}" DIRECTORY)
  find_program(fatbinary fatbinary HINTS "${bindir}" "${CUDAToolkit_BIN_DIR}" NO_CACHE)
  if(NOT fatbinary)
    message(FATAL_ERROR "${fn}: the CUDA toolkit's fatbinary was not found (next to ${nvcc})")
  endif()
  add_custom_command(OUTPUT "${output}"
    COMMAND "${fatbinary}" -64 --create=${output} ${images}
    DEPENDS ${image_files}
    COMMENT "fatbinary -> ${arg_OUTPUT} (${entries})" VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${output}")
  set_target_properties(${name} PROPERTIES FDLINK_FATBIN "${output}")
endfunction()

#[=======================================================================[
fdlink_check(<name> INPUTS <targets | PTX files>... DECLARATIONS <file.decl> [ALLOW_UNDEFINED])

Checks PTX that the project compiles itself against declarations at build time with `fdlink check`
(a mismatch fails the build): an OBJECT library with CUDA_PTX_COMPILATION contributes its PTX.
Creates the custom target <name> (part of ALL). Relocatable objects and static libraries are
checked by fdlink_link(... DECLARATIONS ...) when they are linked.
#]=======================================================================]
function(fdlink_check name)
  set(fn "fdlink_check(${name})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "ALLOW_UNDEFINED" "DECLARATIONS" "INPUTS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_INPUTS OR NOT arg_DECLARATIONS)
    message(FATAL_ERROR "${fn}: INPUTS and DECLARATIONS are required")
  endif()
  get_filename_component(decl "${arg_DECLARATIONS}" ABSOLUTE)
  set(files)
  set(deps "${decl}")
  foreach(in IN LISTS arg_INPUTS)
    if(TARGET ${in})
      get_target_property(ptx_compilation ${in} CUDA_PTX_COMPILATION)
      if(NOT ptx_compilation)
        message(FATAL_ERROR "${fn}: '${in}' does not compile to PTX (CUDA_PTX_COMPILATION); "
                            "check objects and static libraries with fdlink_link(... DECLARATIONS)")
      endif()
      list(APPEND files "$<TARGET_OBJECTS:${in}>")
      list(APPEND deps "$<TARGET_OBJECTS:${in}>" ${in})
    else()
      get_filename_component(in "${in}" ABSOLUTE)
      list(APPEND files "${in}")
      list(APPEND deps "${in}")
    endif()
  endforeach()
  set(opts)
  if(arg_ALLOW_UNDEFINED)
    set(opts --allow-undefined)
  endif()
  _fdlink_outdir(${name} dir)
  file(MAKE_DIRECTORY "${dir}")
  set(stamp "${dir}/check.stamp")
  add_custom_command(OUTPUT "${stamp}"
    COMMAND fdlink::cli check ${opts} --decl "${decl}" ${files}
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS ${deps} fdlink::cli
    COMMENT "fdlink check ${arg_DECLARATIONS}" VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_target(${name} ALL DEPENDS "${stamp}")
endfunction()

#[=======================================================================[
fdlink_embed(<target> <artifact>...)

Embeds device code (cubins, fatbins, PTX: files, or targets made earlier by fdlink_link: their
cubin or fatbin) into the host target
<target> as generated C data, with the lookup function
    int fdl_embedded_find(const char *name, const void **data, size_t *size);
(declared in <fdlink/embed.h>; name is the artifact's file name, e.g. "app.cubin"), so that the
program needs no files at run time. May be called more than once for the same target. The
generated source is rebuilt when an artifact changes.
#]=======================================================================]
function(fdlink_embed target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "")
  set(artifacts ${arg_UNPARSED_ARGUMENTS})
  if(NOT TARGET ${target})
    message(FATAL_ERROR "fdlink_embed: '${target}' is not a target")
  endif()
  if(NOT artifacts)
    message(FATAL_ERROR "fdlink_embed(${target}): no artifacts")
  endif()
  get_target_property(already ${target} FDLINK_EMBED_SOURCE)
  set(files)
  foreach(art IN LISTS artifacts)
    if(TARGET ${art})
      get_target_property(cubin ${art} FDLINK_CUBIN)
      if(NOT cubin)
        get_target_property(cubin ${art} FDLINK_FATBIN)
      endif()
      if(NOT cubin)
        message(FATAL_ERROR "fdlink_embed(${target}): target '${art}' has no FDLINK_CUBIN "
                            "or FDLINK_FATBIN (make it with fdlink_link before embedding it)")
      endif()
      list(APPEND files "${cubin}")
      add_dependencies(${target} ${art})
    else()
      get_filename_component(art "${art}" ABSOLUTE)
      list(APPEND files "${art}")
    endif()
  endforeach()
  set_property(TARGET ${target} APPEND PROPERTY FDLINK_EMBED_FILES ${files})
  if(already)
    return()
  endif()
  get_target_property(bindir ${target} BINARY_DIR)
  set(src "${bindir}/fdlink/${target}_embedded.c")
  set_target_properties(${target} PROPERTIES FDLINK_EMBED_SOURCE "${src}")
  add_custom_command(OUTPUT "${src}"
    COMMAND fdlink::cli embed -o "${src}" "$<TARGET_PROPERTY:${target},FDLINK_EMBED_FILES>"
    DEPENDS "$<TARGET_PROPERTY:${target},FDLINK_EMBED_FILES>" fdlink::cli
    COMMENT "fdlink embed -> ${target}_embedded.c"
    COMMAND_EXPAND_LISTS VERBATIM)
  target_sources(${target} PRIVATE "${src}")
endfunction()

#[=======================================================================[
fdlink_add_test(<name> COMMAND <command> [args...] [GPU [SLOTS <n>] | ALL_GPUS] [LABELS ...]
                [WORKING_DIRECTORY <dir>])

Registers a ctest test. With GPU it gets the label `gpu` and the CTest resource group
`gpus:<n>` (RESOURCE_GROUPS; n = SLOTS, default 1), so that
`ctest -j N --resource-spec-file gpus.json` (the spec from `fdlink resource-spec`) runs GPU
tests in parallel, each on the GPU ctest assigns, which fdl_device_open(-1) opens. A test that
may share a GPU asks for fewer slots than a GPU has (`fdlink resource-spec --slots 4` and SLOTS 1);
one that needs a GPU to itself asks for all of them. ALL_GPUS: the test uses every GPU itself;
it gets the label `gpu` and runs alone (RUN_SERIAL), with no resource group. Without
--resource-spec-file, ctest ignores resource groups. A run that finds no GPU (the program exits
with 77, FDL_EXIT_SKIP in <fdlink/error.h>) is reported as skipped, neither passed nor failed.
#]=======================================================================]
function(fdlink_add_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "GPU;ALL_GPUS" "WORKING_DIRECTORY;SLOTS" "COMMAND;LABELS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fdlink_add_test(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_COMMAND)
    message(FATAL_ERROR "fdlink_add_test(${name}): COMMAND is required")
  endif()
  if(arg_GPU AND arg_ALL_GPUS)
    message(FATAL_ERROR "fdlink_add_test(${name}): GPU and ALL_GPUS exclude each other")
  endif()
  if(DEFINED arg_SLOTS)
    if(NOT arg_GPU)
      message(FATAL_ERROR "fdlink_add_test(${name}): SLOTS needs GPU")
    endif()
    if(NOT arg_SLOTS MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "fdlink_add_test(${name}): SLOTS '${arg_SLOTS}' is not a number of slots (1, 2, ...)")
    endif()
  else()
    set(arg_SLOTS 1)
  endif()
  set(wd)
  if(arg_WORKING_DIRECTORY)
    set(wd WORKING_DIRECTORY "${arg_WORKING_DIRECTORY}")
  endif()
  add_test(NAME ${name} COMMAND ${arg_COMMAND} ${wd})
  set(labels ${arg_LABELS})
  if(arg_GPU OR arg_ALL_GPUS)
    list(APPEND labels gpu)
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  if(arg_GPU)
    set_tests_properties(${name} PROPERTIES RESOURCE_GROUPS "gpus:${arg_SLOTS}")
  elseif(arg_ALL_GPUS)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
  if(labels)
    set_tests_properties(${name} PROPERTIES LABELS "${labels}")
  endif()
endfunction()
