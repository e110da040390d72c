# The catalogue's damaged binaries (issue 22, classes 1 and 9): each kind of ELF damage that the
# validation of link/src/elfread.c refuses, made at test time from a real nvcc-built cubin by
# fdlink_badgen (badgen_elf.c), alone and inside a fatbin, a host object and a static library;
# damaged host objects; archives with an empty first member or a BSD long name. Before the
# validation, nvJitLink died of SIGSEGV on 11 of these damages (tests/fuzz/jloracle.c --all shows
# it); now each is one line, "FILE: malformed cubin: WHAT (at byte N)", exit 1, nothing written.
set(_fdl_caller caller.ptx=copy:data/link/caller.ptx)

# every damage, the cubin alone (inspect) and linked
foreach(_d shoff_zero shoff_past shentsize shnum_big shstrndx shstrtab_type shstrtab_nul
           strtab_nul section_name_past sym_names_past sym_shndx symtab_entsize symtab_size
           symtab_link symtab_info symtab_outside text_outside overlap overlap_table overlap_header
           align rela_sym rela_link rela_info rela_entsize ehsize version type truncated)
  fdlink_bad_input(inspect_cubin_${_d} SPECS bad.cubin=elf:${_d}:cubin:fx/mul.cubin
    ARGS inspect bad.cubin)
endforeach()
# the damages nvJitLink crashed on (and those the issue names), inside every container, linked
foreach(_d shoff_zero sym_names_past overlap overlap_header symtab_outside symtab_size rela_sym
           shentsize text_outside)
  fdlink_bad_input(link_cubin_${_d} SPECS ${_fdl_caller} bad.cubin=elf:${_d}:cubin:fx/mul.cubin
    ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.cubin)
  fdlink_bad_input(link_fatbin_${_d} SPECS ${_fdl_caller} bad.fatbin=elf:${_d}:fatbin:fx/mul.cubin
    ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.fatbin)
  fdlink_bad_input(inspect_object_${_d} SPECS bad.o=elf:${_d}:object:fx/mul.cubin
    ARGS inspect bad.o)
  fdlink_bad_input(link_archive_${_d} SPECS ${_fdl_caller} libbad.a=elf:${_d}:archive:fx/mul.cubin
    ARGS link -arch=sm_90 -o out.cubin caller.ptx libbad.a)
endforeach()
# a damaged member for an architecture the link does not use is not read by nvJitLink (it links
# such a fatbin for sm_80 without dying: jloracle --all --arch sm_80), so it is no reason to refuse
# the input either (issue 34): the link for sm_80 reports what is missing, not the damage
foreach(_d overlap symtab_outside)
  fdlink_bad_input(link_fatbin_other_arch_${_d} SPECS ${_fdl_caller}
    bad.fatbin=elf:${_d}:fatbin:fx/mul.cubin
    ARGS link -arch=sm_80 -o out.cubin caller.ptx bad.fatbin)
endforeach()
# linked (executable) cubins: the program header table and its segments
foreach(_d phoff_past phoff_shifted phentsize segment_outside segment_filesz)
  fdlink_bad_input(inspect_exec_cubin_${_d} SPECS bad.cubin=elf:${_d}:cubin:fx/mul_exec.cubin
    ARGS inspect bad.cubin)
endforeach()
# the host object's own ELF damaged
foreach(_d shoff_zero shstrndx section_name_past shstrtab_nul version ehsize)
  fdlink_bad_input(link_host_object_${_d} SPECS ${_fdl_caller} bad.o=elfhost:${_d}:fx/mul.cubin
    ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.o)
endforeach()

# A linker that dies: a damaged cubin, LZ4-compressed in a fatbin, on a machine where fdlink has
# no liblz4 to open it and validate it (FDLINK_LIBLZ4 names a missing library): the real
# nvJitLink gets it and dies of SIGSEGV. The CLI isolates the link by default: one line naming
# the linker, the signal and the inputs, exit 1, no output. (Without isolation: exit 139.)
# (a section table at byte 0 kills it with SIGSEGV every time; other damages do it only some of
# the times, or by another signal, and are left to the oracle)
foreach(_d shoff_zero)
  fdlink_bad_input(link_linker_dies_${_d} SPECS ${_fdl_caller}
    bad.fatbin=elf:${_d}:fatbin_lz4:fx/mul.cubin
    ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.fatbin)
  set_tests_properties(bad_link_linker_dies_${_d} PROPERTIES
    ENVIRONMENT "FDLINK_LIBLZ4=/nonexistent/liblz4.so.1")
endforeach()
# the same gap, symbol names past .strtab: nvJitLink does not die but prints "@E@error ..." lines
# itself; isolated, they are kept in the log (which the CLI shows after its line), not printed raw
fdlink_bad_input(link_unvalidated_names_log_kept MULTILINE SPECS ${_fdl_caller}
  bad.fatbin=elf:sym_names_past:fatbin_lz4:fx/mul.cubin
  ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.fatbin)
set_tests_properties(bad_link_unvalidated_names_log_kept PROPERTIES
  ENVIRONMENT "FDLINK_LIBLZ4=/nonexistent/liblz4.so.1")
fdlink_bad_input(link_linker_dies_isolated_by_environment SPECS ${_fdl_caller}
  bad.fatbin=elf:shoff_zero:fatbin_lz4:fx/mul.cubin
  ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.fatbin)
set_tests_properties(bad_link_linker_dies_isolated_by_environment PROPERTIES
  ENVIRONMENT "FDLINK_LIBLZ4=/nonexistent/liblz4.so.1;FDLINK_LINK_ISOLATE=1")
fdlink_bad_input(link_linker_dies_isolate_option SPECS ${_fdl_caller}
  bad.fatbin=elf:shoff_zero:fatbin_lz4:fx/mul.cubin
  ARGS link -arch=sm_90 --isolate -o out.cubin caller.ptx bad.fatbin)
set_tests_properties(bad_link_linker_dies_isolate_option PROPERTIES
  ENVIRONMENT "FDLINK_LIBLZ4=/nonexistent/liblz4.so.1;FDLINK_LINK_ISOLATE=0")

# Archives nvJitLink misreads (class 9): an empty first member (nvJitLink stopped there) and a
# BSD long name ("#1/N": nvJitLink read the name as the member's first bytes) used to be found
# by fdlink's reader and then "defined in no input" at the link. fdlink now gives nvJitLink the
# archive rewritten in GNU form (fdl__archive_for_linker): both link, the same as libmul.a.
foreach(_a ar_empty_first ar_bsd)
  fdlink_bad_input(link_${_a} SPECS ${_fdl_caller} libk.a=${_a}:fx/mul.o
    ARGS link -arch=sm_90 -o out.cubin caller.ptx libk.a)
  fdlink_bad_input(inspect_${_a} SPECS libk.a=${_a}:fx/mul.o ARGS inspect libk.a)
  # a cubin as a member: nvJitLink skips it, so fdlink refuses it at once (check and link alike)
  fdlink_bad_input(link_${_a}_cubin_member SPECS ${_fdl_caller} libk.a=${_a}:fx/mul.cubin
    ARGS link -arch=sm_90 -o out.cubin caller.ptx libk.a)
endforeach()

# a cubin's kernel parameters from its .nv.info (EIATTR_KPARAM_INFO: count and sizes), checked
# before a GPU is needed, as PTX's are (issue 34); a device function of that name is no kernel
fdlink_bad_input(run_cubin_too_few_args SPECS k.cubin=copy:fx/kernel_named.cubin
  ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1
  ARGS run k.cubin -k mul_f32_f32 f32[1] f32:2)
fdlink_bad_input(run_cubin_wrong_size SPECS k.cubin=copy:fx/kernel_named.cubin
  ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1
  ARGS run k.cubin -k mul_f32_f32 f32[1] f64:2 f32:3)
fdlink_bad_input(run_cubin_args_agree_then_no_gpu SPECS k.cubin=copy:fx/kernel_named.cubin
  ENV FDLINK_LIBCUDA=/nonexistent/libcuda.so.1
  ARGS run k.cubin -k mul_f32_f32 f32[1] f32:2 f32:3)

# inspect --code: kernels and functions only, the variables counted (issue 34)
fdlink_bad_input(inspect_code_only SPECS k.cubin=copy:fx/cuda13_traits_values.cubin
  ARGS inspect --code k.cubin)
