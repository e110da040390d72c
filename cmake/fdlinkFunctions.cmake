# fdlink CMake functions: device libraries compiled, checked and linked ahead of time, embedded in
# programs, tested with ctest. Included by fdlinkConfig.cmake (installed package) and by the fdlink
# source tree (add_subdirectory). They need the target fdlink::cli and CUDAToolkit's nvcc.
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

function(_fdlink_nvcc out)
  if(TARGET CUDA::nvcc)
    set(${out} "$<TARGET_FILE:CUDA::nvcc>" PARENT_SCOPE)
  elseif(CUDAToolkit_NVCC_EXECUTABLE)
    set(${out} "${CUDAToolkit_NVCC_EXECUTABLE}" PARENT_SCOPE)
  else()
    message(FATAL_ERROR "fdlink: nvcc not found (find_package(CUDAToolkit) found no nvcc)")
  endif()
endfunction()

#[=======================================================================[
fdlink_add_device_library(<name>
    SOURCES <file.cu>...
    [DECLARATIONS <file.decl>]                        (none: kernels only, nothing to check)
    [ALLOW_UNDEFINED]                                 (callers: declared functions may be only referenced)
    [FORMATS ptx cubin fatbin ltoir object library]   (default: ptx)
    [ARCHITECTURES 80 90 ...]                         (default: FDLINK_ARCHITECTURES or 90)
    [INCLUDE_DIRECTORIES <dir>...]
    [COMPILE_OPTIONS <nvcc option>...])

Compiles the sources ahead of time into every requested format for every architecture, with the
prototypes header generated from DECLARATIONS force-included (a definition that disagrees with its
declaration does not compile), and runs `fdlink check` on the PTX at build time (a signature
mismatch fails the build). Creates the custom target <name>, whose properties name the artifacts:
  FDLINK_HEADER, FDLINK_HEADER_DIR, FDLINK_DECLARATIONS, FDLINK_ARCHITECTURES, FDLINK_FORMATS,
  FDLINK_<FORMAT>_<arch> (e.g. FDLINK_PTX_90, FDLINK_CUBIN_90, FDLINK_LTOIR_90: lists of files),
  FDLINK_FATBIN, FDLINK_OBJECT, FDLINK_LIBRARY (files holding every architecture).
A compiler launcher wraps every nvcc compilation (not the `nvcc -lib` archive step), so that ccache
or sccache serve repeated builds from their cache: FDLINK_COMPILER_LAUNCHER when defined (empty:
none), else CMAKE_CUDA_COMPILER_LAUNCHER (variable, then environment), e.g.
-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache. Every compilation passes nvcc `-c` (which changes none of
its outputs) so that the launcher sees it as one.
#]=======================================================================]
function(fdlink_add_device_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "ALLOW_UNDEFINED" "DECLARATIONS"
    "SOURCES;FORMATS;ARCHITECTURES;INCLUDE_DIRECTORIES;COMPILE_OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fdlink_add_device_library(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "fdlink_add_device_library(${name}): SOURCES is required")
  endif()
  if(NOT arg_FORMATS)
    set(arg_FORMATS ptx)
  endif()
  foreach(f IN LISTS arg_FORMATS)
    if(NOT f MATCHES "^(ptx|cubin|fatbin|ltoir|object|library)$")
      message(FATAL_ERROR "fdlink_add_device_library(${name}): unknown format '${f}' "
                          "(expected ptx cubin fatbin ltoir object library)")
    endif()
  endforeach()
  if(NOT arg_ARCHITECTURES)
    if(FDLINK_ARCHITECTURES)
      set(arg_ARCHITECTURES ${FDLINK_ARCHITECTURES})
    else()
      set(arg_ARCHITECTURES 90)
    endif()
  endif()
  foreach(a IN LISTS arg_ARCHITECTURES)
    if(NOT a MATCHES "^[0-9]+[af]?$")
      message(FATAL_ERROR "fdlink_add_device_library(${name}): bad architecture '${a}' (expected e.g. 90)")
    endif()
  endforeach()

  _fdlink_outdir(${name} dir)
  _fdlink_nvcc(nvcc)
  _fdlink_launcher(launcher)
  # nvcc as the compilations run it: behind the launcher, with -c (a compilation, to ccache; with
  # -ptx, -cubin, -ltoir or -fatbin too, nvcc writes that output, byte for byte as without -c)
  set(cc ${launcher} "${nvcc}" -c)
  file(MAKE_DIRECTORY "${dir}/include")
  set(decl)
  set(header)
  # fdlink's own headers (fdlink/device.h) come from the library target's include directories.
  set(common -rdc=true -I "${dir}/include"
    "-I$<JOIN:$<TARGET_PROPERTY:fdlink::fdlink,INTERFACE_INCLUDE_DIRECTORIES>,$<SEMICOLON>-I>")
  if(arg_DECLARATIONS)
    get_filename_component(decl "${arg_DECLARATIONS}" ABSOLUTE)
    get_filename_component(decl_base "${decl}" NAME_WE)
    set(header "${dir}/include/${decl_base}.cuh")
    add_custom_command(OUTPUT "${header}"
      COMMAND fdlink::cli header "${decl}" -o "${header}"
      DEPENDS "${decl}" fdlink::cli
      COMMENT "fdlink header ${decl_base}.decl" VERBATIM)
    list(APPEND common -include "${header}")
  endif()
  foreach(inc IN LISTS arg_INCLUDE_DIRECTORIES)
    get_filename_component(inc "${inc}" ABSOLUTE)
    list(APPEND common -I "${inc}")
  endforeach()
  list(APPEND common ${arg_COMPILE_OPTIONS})

  set(all_outputs)
  set(objects)
  set(props)
  set(gencode)
  foreach(a IN LISTS arg_ARCHITECTURES)
    list(APPEND gencode "-gencode=arch=compute_${a},code=[sm_${a},compute_${a}]")
  endforeach()

  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE)
    get_filename_component(base "${src}" NAME_WE)
    set(deps "${src}" ${header})
    foreach(a IN LISTS arg_ARCHITECTURES)
      # PTX is always built: the conformance check reads it.
      set(ptx "${dir}/${base}.compute_${a}.ptx")
      add_custom_command(OUTPUT "${ptx}"
        COMMAND ${cc} -ptx -arch=compute_${a} ${common} -o "${ptx}" "${src}"
        DEPENDS ${deps} COMMENT "nvcc -ptx ${base}.cu (compute_${a})" VERBATIM COMMAND_EXPAND_LISTS)
      list(APPEND ptx_${a} "${ptx}")
      list(APPEND all_outputs "${ptx}")
      if("cubin" IN_LIST arg_FORMATS)
        set(cubin "${dir}/${base}.sm_${a}.cubin")
        add_custom_command(OUTPUT "${cubin}"
          COMMAND ${cc} -cubin -arch=sm_${a} ${common} -o "${cubin}" "${src}"
          DEPENDS ${deps} COMMENT "nvcc -cubin ${base}.cu (sm_${a})" VERBATIM COMMAND_EXPAND_LISTS)
        list(APPEND cubin_${a} "${cubin}")
        list(APPEND all_outputs "${cubin}")
      endif()
      if("ltoir" IN_LIST arg_FORMATS)
        set(ltoir "${dir}/${base}.sm_${a}.ltoir")
        add_custom_command(OUTPUT "${ltoir}"
          COMMAND ${cc} -ltoir -dlto -arch=lto_${a} ${common} -o "${ltoir}" "${src}"
          DEPENDS ${deps} COMMENT "nvcc -ltoir ${base}.cu (lto_${a})" VERBATIM COMMAND_EXPAND_LISTS)
        list(APPEND ltoir_${a} "${ltoir}")
        list(APPEND all_outputs "${ltoir}")
      endif()
    endforeach()
    if("fatbin" IN_LIST arg_FORMATS)
      set(fatbin "${dir}/${base}.fatbin")
      add_custom_command(OUTPUT "${fatbin}"
        COMMAND ${cc} -fatbin ${gencode} ${common} -o "${fatbin}" "${src}"
        DEPENDS ${deps} COMMENT "nvcc -fatbin ${base}.cu" VERBATIM COMMAND_EXPAND_LISTS)
      list(APPEND fatbins "${fatbin}")
      list(APPEND all_outputs "${fatbin}")
    endif()
    if("object" IN_LIST arg_FORMATS OR "library" IN_LIST arg_FORMATS)
      set(obj "${dir}/${base}.o")
      add_custom_command(OUTPUT "${obj}"
        COMMAND ${launcher} "${nvcc}" -dc ${gencode} ${common} -Xcompiler=-fPIC -o "${obj}" "${src}"
        DEPENDS ${deps} COMMENT "nvcc -dc ${base}.cu" VERBATIM COMMAND_EXPAND_LISTS)
      list(APPEND objects "${obj}")
      list(APPEND all_outputs "${obj}")
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
  foreach(a IN LISTS arg_ARCHITECTURES)
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

  add_custom_target(${name} ALL DEPENDS ${all_outputs} ${stamps} ${header})
  set_target_properties(${name} PROPERTIES
    FDLINK_HEADER "${header}"
    FDLINK_HEADER_DIR "${dir}/include"
    FDLINK_DECLARATIONS "${decl}"
    FDLINK_ARCHITECTURES "${arg_ARCHITECTURES}"
    FDLINK_FORMATS "${arg_FORMATS}"
    FDLINK_FATBIN "${fatbins}"
    FDLINK_OBJECT "${objects}"
    FDLINK_LIBRARY "${lib}")
  foreach(a IN LISTS arg_ARCHITECTURES)
    set_target_properties(${name} PROPERTIES
      FDLINK_PTX_${a} "${ptx_${a}}"
      FDLINK_CUBIN_${a} "${cubin_${a}}"
      FDLINK_LTOIR_${a} "${ltoir_${a}}")
  endforeach()
endfunction()

#[=======================================================================[
fdlink_link(<name>
    INPUTS <device library targets | files>...
    ARCH sm_NN
    OUTPUT <file.cubin>
    [LTO | NO_LTO]
    [DECLARATIONS <file.decl>...]
    [OPTIONS <fdlink link option>...])

Links ahead of time, at build time, with `fdlink link`. A device library target (made earlier by
fdlink_add_device_library) contributes, for
the architecture NN, its LTO-IR when it has some (unless NO_LTO), else its static library, else its
objects, else its fatbins, else its cubins, else its PTX (that of NN, else of the newest older
architecture it was built for);
its declarations are checked unless DECLARATIONS overrides them. Undefined symbols or ABI
mismatches fail the build with the linker's message. Creates the custom target <name> with the
property FDLINK_CUBIN.
#]=======================================================================]
function(fdlink_link name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "LTO;NO_LTO" "ARCH;OUTPUT" "INPUTS;DECLARATIONS;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fdlink_link(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_INPUTS OR NOT arg_ARCH OR NOT arg_OUTPUT)
    message(FATAL_ERROR "fdlink_link(${name}): INPUTS, ARCH and OUTPUT are required")
  endif()
  if(arg_LTO AND arg_NO_LTO)
    message(FATAL_ERROR "fdlink_link(${name}): LTO and NO_LTO exclude each other")
  endif()
  if(NOT arg_ARCH MATCHES "^sm_([0-9]+[af]?)$")
    message(FATAL_ERROR "fdlink_link(${name}): bad ARCH '${arg_ARCH}' (expected e.g. sm_90)")
  endif()
  set(a "${CMAKE_MATCH_1}")
  get_filename_component(output "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  set(files)
  set(deps)
  set(decls)
  set(decl_files)
  foreach(decl IN LISTS arg_DECLARATIONS)
    get_filename_component(decl "${decl}" ABSOLUTE)
    list(APPEND decls --decl "${decl}")
    list(APPEND deps "${decl}")
  endforeach()
  foreach(in IN LISTS arg_INPUTS)
    if(TARGET ${in})
      get_target_property(ltoir ${in} FDLINK_LTOIR_${a})
      get_target_property(cubin ${in} FDLINK_CUBIN_${a})
      get_target_property(ptx ${in} FDLINK_PTX_${a})
      get_target_property(in_decl ${in} FDLINK_DECLARATIONS)
      if(NOT ptx)
        # PTX of an older virtual architecture links for a newer one: take the newest not above.
        get_target_property(in_archs ${in} FDLINK_ARCHITECTURES)
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
      if(NOT ltoir AND NOT cubin AND NOT ptx AND NOT library AND NOT object AND NOT fatbin)
        message(FATAL_ERROR "fdlink_link(${name}): '${in}' has no artifacts for ${arg_ARCH} "
                            "(is it a device library built for ARCHITECTURES ${a}?)")
      endif()
      # containers holding every architecture of the library: usable when it was built for NN
      get_target_property(in_archs ${in} FDLINK_ARCHITECTURES)
      set(library)
      set(object)
      set(fatbin)
      if(a IN_LIST in_archs)
        get_target_property(library ${in} FDLINK_LIBRARY)
        get_target_property(object ${in} FDLINK_OBJECT)
        get_target_property(fatbin ${in} FDLINK_FATBIN)
      endif()
      if(ltoir AND NOT arg_NO_LTO)
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
      list(APPEND files ${chosen})
      list(APPEND deps ${chosen} ${in})
      if(NOT arg_DECLARATIONS AND in_decl AND NOT "${in_decl}" IN_LIST decl_files)
        list(APPEND decl_files "${in_decl}")
        list(APPEND decls --decl "${in_decl}")
      endif()
    else()
      get_filename_component(in "${in}" ABSOLUTE)
      list(APPEND files "${in}")
      list(APPEND deps "${in}")
    endif()
  endforeach()
  set(lto)
  if(arg_LTO)
    set(lto --lto)
  elseif(arg_NO_LTO)
    set(lto --no-lto)
  endif()
  add_custom_command(OUTPUT "${output}"
    COMMAND fdlink::cli link -arch=${arg_ARCH} ${lto} ${decls} ${arg_OPTIONS} -o "${output}" ${files}
    DEPENDS ${deps} fdlink::cli
    COMMENT "fdlink link -arch=${arg_ARCH} -> ${arg_OUTPUT}" VERBATIM)
  add_custom_target(${name} ALL DEPENDS "${output}")
  set_target_properties(${name} PROPERTIES FDLINK_CUBIN "${output}")
endfunction()

#[=======================================================================[
fdlink_embed(<target> <artifact>...)

Embeds device code (cubins, fatbins, PTX: files, or targets made earlier by fdlink_link) into the host target
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
        message(FATAL_ERROR "fdlink_embed(${target}): target '${art}' has no FDLINK_CUBIN "
                            "(make it with fdlink_link before embedding it)")
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
