# The catalogue of bad inputs and usages: every case is a golden CLI test (exit status, the one
# line of stderr, nothing on stdout), and the runner (run_bad.cmake) fails when a case leaves a
# file behind (a partial output, a temporary file) or changes an input. Inputs are made fresh
# for each case by fdlink_badgen (badgen.c lists the kinds). Paths are relative to the scratch
# folder. OK stands for a declaration file and a PTX file that are fine.
set(OK_DECL ok.decl=copy:data/check/functions.decl)
set(OK_PTX ok.ptx=copy:data/check/conforming.ptx)
set(CALLER caller.ptx=copy:data/link/caller.ptx)
set(MUL mul.ptx=copy:data/link/mul.ptx)

# ---- empty, truncated, foreign and directory inputs ------------------------------------------
fdlink_bad_input(check_empty_ptx SPECS ${OK_DECL} e.ptx=empty ARGS check --decl ok.decl e.ptx)
fdlink_bad_input(check_empty_decl SPECS e.decl=empty ${OK_PTX} ARGS check --decl e.decl ok.ptx)
fdlink_bad_input(header_empty_decl SPECS e.decl=empty ARGS header e.decl -o out.cuh)
fdlink_bad_input(link_empty_cubin SPECS ${CALLER} e.cubin=empty
  ARGS link -arch=sm_90 -o out.cubin caller.ptx e.cubin)
fdlink_bad_input(inspect_empty SPECS e.ptx=empty ARGS inspect e.ptx)
fdlink_bad_input(embed_empty SPECS e.cubin=empty ARGS embed -o out.c e.cubin)
fdlink_bad_input(link_truncated_cubin SPECS ${CALLER} t.cubin=head:fx/mul.cubin:700
  ARGS link -arch=sm_90 -o out.cubin caller.ptx t.cubin)
fdlink_bad_input(link_truncated_fatbin SPECS ${CALLER} t.fatbin=head:fx/mul.fatbin:100
  ARGS link -arch=sm_90 -o out.cubin caller.ptx t.fatbin)
fdlink_bad_input(link_truncated_archive SPECS ${CALLER} libt.a=head:fx/libmul.a:300
  ARGS link -arch=sm_90 -o out.cubin caller.ptx libt.a)
fdlink_bad_input(link_truncated_object SPECS ${CALLER} t.o=head:fx/mul.o:1000
  ARGS link -arch=sm_90 -o out.cubin caller.ptx t.o)
# nvJitLink's own words follow the first line (the log is kept whole)
fdlink_bad_input(link_truncated_ltoir MULTILINE SPECS t.ltoir=head:fx/caller.ltoir:200 ${MUL}
  ARGS link -arch=sm_90 -o out.cubin t.ltoir mul.ptx)
fdlink_bad_input(link_truncated_ptx SPECS ${CALLER} t.ptx=head:data/link/mul.ptx:300
  ARGS link -arch=sm_90 -o out.cubin caller.ptx t.ptx)
fdlink_bad_input(check_truncated_decl SPECS t.decl=head:data/check/functions.decl:70 ${OK_PTX}
  ARGS check --decl t.decl ok.ptx)
fdlink_bad_input(inspect_truncated_cubin SPECS t.cubin=head:fx/mul.cubin:64 ARGS inspect t.cubin)
fdlink_bad_input(inspect_truncated_fatbin SPECS t.fatbin=head:fx/mul_lz4.fatbin:200
  ARGS inspect t.fatbin)
fdlink_bad_input(link_host_elf SPECS ${CALLER} h.o=host_elf
  ARGS link -arch=sm_90 -o out.cubin caller.ptx h.o)
fdlink_bad_input(link_host_object_without_device_code SPECS ${CALLER} h.o=copy:fx/host_only.o
  ARGS link -arch=sm_90 -o out.cubin caller.ptx h.o)
fdlink_bad_input(link_cuda_elf_headers_past_end SPECS ${CALLER} bad.cubin=cuda_elf_headers
  ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.cubin)
fdlink_bad_input(inspect_cuda_elf_headers_past_end SPECS bad.cubin=cuda_elf_headers
  ARGS inspect bad.cubin)
fdlink_bad_input(link_fatbin_overrun SPECS ${CALLER} bad.fatbin=fatbin_overrun
  ARGS link -arch=sm_90 -o out.cubin caller.ptx bad.fatbin)
fdlink_bad_input(link_bad_archive SPECS ${CALLER} libbad.a=archive_bad
  ARGS link -arch=sm_90 -o out.cubin caller.ptx libbad.a)
fdlink_bad_input(link_ltoir_magic_only SPECS bad.ltoir=ltoir_truncated ${MUL}
  ARGS link -arch=sm_90 -o out.cubin bad.ltoir mul.ptx)
fdlink_bad_input(link_random_bytes SPECS ${CALLER} r.bin=random:4096
  ARGS link -arch=sm_90 -o out.cubin caller.ptx r.bin)
fdlink_bad_input(check_random_bytes SPECS ${OK_DECL} r.ptx=random:4096 ARGS check --decl ok.decl r.ptx)
fdlink_bad_input(check_random_decl SPECS r.decl=random:4096 ${OK_PTX} ARGS check --decl r.decl ok.ptx)
fdlink_bad_input(header_random_decl SPECS r.decl=random:512 ARGS header r.decl -o out.cuh)
fdlink_bad_input(inspect_random_bytes SPECS r.bin=random:4096 ARGS inspect r.bin)
fdlink_bad_input(link_png SPECS ${CALLER} logo.png=copy:data/link/logo.png
  ARGS link -arch=sm_90 -o out.cubin caller.ptx logo.png)
fdlink_bad_input(check_cubin_as_ptx SPECS ${OK_DECL} mul.ptx=copy:fx/mul.cubin
  ARGS check --decl ok.decl mul.ptx)
fdlink_bad_input(check_directory_decl SPECS d=dir ${OK_PTX} ARGS check --decl d ok.ptx)
fdlink_bad_input(header_directory SPECS d.decl=dir ARGS header d.decl -o out.cuh)
fdlink_bad_input(link_directory_input SPECS ${CALLER} d.ptx=dir
  ARGS link -arch=sm_90 -o out.cubin caller.ptx d.ptx)
fdlink_bad_input(embed_directory_input SPECS d=dir ARGS embed -o out.c d)
fdlink_bad_input(inspect_dangling_symlink SPECS gone.ptx=symlink:nowhere.ptx ARGS inspect gone.ptx)
fdlink_bad_input(link_symlink_loop SPECS ${CALLER} a.ptx=symlink:b.ptx b.ptx=symlink:a.ptx
  ARGS link -arch=sm_90 -o out.cubin caller.ptx a.ptx)
fdlink_bad_input(check_missing_input SPECS ${OK_DECL} ARGS check --decl ok.decl nowhere.ptx)
fdlink_bad_input(embed_missing_input ARGS embed -o out.c nowhere.cubin)

# ---- unreadable inputs (run as nobody where this is root) ------------------------------------
fdlink_bad_input(check_unreadable_ptx AS_NOBODY SPECS ${OK_DECL} u.ptx=unreadable:data/check/conforming.ptx
  ARGS check --decl ok.decl u.ptx)
fdlink_bad_input(check_unreadable_decl AS_NOBODY SPECS u.decl=unreadable:data/check/functions.decl ${OK_PTX}
  ARGS check --decl u.decl ok.ptx)
fdlink_bad_input(link_unreadable_input AS_NOBODY SPECS ${CALLER} u.ptx=unreadable:data/link/mul.ptx
  ARGS link -arch=sm_90 -o out/app.cubin caller.ptx u.ptx)
fdlink_bad_input(embed_unreadable_input AS_NOBODY SPECS u.cubin=unreadable:fx/mul.cubin
  ARGS embed -o out/out.c u.cubin)

# ---- outputs: a missing or read-only folder, a folder, the input itself ----------------------
fdlink_bad_input(header_output_missing_folder SPECS ${OK_DECL} ARGS header ok.decl -o no/such/out.cuh)
fdlink_bad_input(link_output_missing_folder SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o no/such/app.cubin caller.ptx mul.ptx)
fdlink_bad_input(embed_output_missing_folder SPECS mul.cubin=copy:fx/mul.cubin
  ARGS embed -o no/such/out.c mul.cubin)
fdlink_bad_input(header_output_readonly_folder AS_NOBODY SPECS ${OK_DECL} ro=readonly_dir
  ARGS header ok.decl -o ro/out.cuh)
fdlink_bad_input(link_output_readonly_folder AS_NOBODY SPECS ${CALLER} ${MUL} ro=readonly_dir
  ARGS link -arch=sm_90 -o ro/app.cubin caller.ptx mul.ptx)
fdlink_bad_input(embed_output_readonly_folder AS_NOBODY SPECS mul.cubin=copy:fx/mul.cubin ro=readonly_dir
  ARGS embed -o ro/out.c mul.cubin)
fdlink_bad_input(link_output_is_a_folder SPECS ${CALLER} ${MUL} out=dir
  ARGS link -arch=sm_90 -o out caller.ptx mul.ptx)
fdlink_bad_input(header_output_is_a_folder SPECS ${OK_DECL} out=dir ARGS header ok.decl -o out)
fdlink_bad_input(link_output_is_an_input SPECS ${CALLER} keep.ptx=copy:data/link/mul.ptx
  ARGS link -arch=sm_90 -o keep.ptx caller.ptx keep.ptx)
fdlink_bad_input(link_output_is_an_input_through_a_symlink
  SPECS ${CALLER} keep.ptx=copy:data/link/mul.ptx alias.ptx=symlink:keep.ptx
  ARGS link -arch=sm_90 -o alias.ptx caller.ptx keep.ptx)
fdlink_bad_input(link_output_is_an_input_by_another_path SPECS ${CALLER} sub/keep.ptx=copy:data/link/mul.ptx
  ARGS link -arch=sm_90 -o sub/../sub/keep.ptx caller.ptx sub/keep.ptx)
fdlink_bad_input(link_output_is_the_declarations SPECS ${CALLER} ${MUL} mul.decl=copy:data/link/mul.decl
  ARGS link -arch=sm_90 --decl mul.decl -o mul.decl caller.ptx mul.ptx)
fdlink_bad_input(link_emit_ptx_is_an_input SPECS caller.ltoir=copy:fx/caller.ltoir ${MUL}
  ARGS link -arch=sm_90 --emit-ptx=mul.ptx -o app.cubin caller.ltoir mul.ptx)
fdlink_bad_input(link_emit_ptx_is_the_output SPECS caller.ltoir=copy:fx/caller.ltoir ${MUL}
  ARGS link -arch=sm_90 --emit-ptx=app.cubin -o app.cubin caller.ltoir mul.ptx)
fdlink_bad_input(header_output_is_the_input SPECS ${OK_DECL} ARGS header ok.decl -o ok.decl)
fdlink_bad_input(header_output_is_the_input_through_a_symlink SPECS ${OK_DECL} out.cuh=symlink:ok.decl
  ARGS header ok.decl -o out.cuh)
fdlink_bad_input(embed_output_is_an_input SPECS mul.cubin=copy:fx/mul.cubin
  ARGS embed -o mul.cubin mul.cubin)
fdlink_bad_input(embed_output_is_a_named_input SPECS mul.cubin=copy:fx/mul.cubin
  ARGS embed -o mul.cubin app=mul.cubin)

# ---- unknown and conflicting options ---------------------------------------------------------
fdlink_bad_input(link_unknown_option SPECS ${CALLER} ARGS link -arch=sm_90 --frobnicate caller.ptx)
fdlink_bad_input(header_unknown_option SPECS ${OK_DECL} ARGS header --frobnicate ok.decl)
fdlink_bad_input(embed_unknown_option SPECS mul.cubin=copy:fx/mul.cubin ARGS embed -x -o out.c mul.cubin)
fdlink_bad_input(inspect_unknown_option SPECS ${MUL} ARGS inspect --frobnicate mul.ptx)
fdlink_bad_input(header_two_declaration_files SPECS ${OK_DECL} two.decl=copy:data/link/mul.decl
  ARGS header ok.decl two.decl -o out.cuh)
fdlink_bad_input(link_maxrregcount_not_a_number SPECS ${CALLER}
  ARGS link -arch=sm_90 --maxrregcount=lots caller.ptx)
fdlink_bad_input(link_jump_table_density_too_high SPECS ${CALLER}
  ARGS link -arch=sm_90 --jump-table-density=102 caller.ptx)
fdlink_bad_input(link_xptxas_not_an_option SPECS ${CALLER}
  ARGS link -arch=sm_90 -Xptxas warn-spills caller.ptx)
fdlink_bad_input(link_arch_empty SPECS ${CALLER} ARGS link -arch= -o app.cubin caller.ptx)
fdlink_bad_input(link_arch_unknown SPECS ${CALLER} ${MUL} ARGS link -arch=sm_1 -o app.cubin caller.ptx mul.ptx)
fdlink_bad_input(link_o_without_file SPECS ${CALLER} ARGS link -arch=sm_90 caller.ptx -o)
fdlink_bad_input(embed_without_output SPECS mul.cubin=copy:fx/mul.cubin ARGS embed mul.cubin)

# ---- wrong-arch cubins, PTX newer than the linker --------------------------------------------
fdlink_bad_input(link_cubin_for_another_arch SPECS ${CALLER} m80.cubin=copy:fx/mul_sm80.cubin
  ARGS link -arch=sm_90 -o app.cubin caller.ptx m80.cubin)
fdlink_bad_input(link_cubin_newer_than_target SPECS ${CALLER} m90.cubin=copy:fx/mul.cubin
  ARGS link -arch=sm_75 -o app.cubin caller.ptx m90.cubin)
# the first line, then ptxas's log as nvJitLink gives it
fdlink_bad_input(link_ptx_newer_than_the_linker MULTILINE SPECS ${CALLER} new.ptx=ptx_version:99.9
  ARGS link -arch=sm_90 -o app.cubin caller.ptx new.ptx)
fdlink_bad_input(check_ptx_version_malformed SPECS ${OK_DECL} v.ptx=ptx_version:nine
  ARGS check --decl ok.decl v.ptx)

# ---- huge lines, NUL bytes, deep nesting, 100k declarations ----------------------------------
fdlink_bad_input(check_nul_byte SPECS ${OK_DECL} nul.ptx=nul_ptx ARGS check --decl ok.decl nul.ptx)
fdlink_bad_input(link_nul_byte SPECS ${CALLER} nul.ptx=nul_ptx
  ARGS link -arch=sm_90 -o app.cubin caller.ptx nul.ptx)
# a 4 MiB comment line in conforming PTX: read in linear time, and the check passes
fdlink_bad_input(check_huge_line_ptx SPECS ${OK_DECL} huge.ptx=huge_line_ptx:data/check/conforming.ptx
  ARGS check --decl ok.decl huge.ptx)
fdlink_bad_input(link_huge_line_ptx SPECS ${CALLER} huge.ptx=huge_line_ptx:data/link/mul.ptx
  ARGS link -arch=sm_90 -o no/such/app.cubin caller.ptx huge.ptx)
fdlink_bad_input(check_huge_line_decl SPECS huge.decl=huge_line_decl ${OK_PTX}
  ARGS check --decl huge.decl ok.ptx)
fdlink_bad_input(header_huge_line_decl SPECS huge.decl=huge_line_decl ARGS header huge.decl -o out.cuh)
fdlink_bad_input(header_deep_cpointer SPECS deep.decl=deep_decl:600 ARGS header deep.decl -o out.cuh)
fdlink_bad_input(check_deep_cpointer SPECS deep.decl=deep_decl:100000 ${OK_PTX}
  ARGS check --decl deep.decl ok.ptx)
fdlink_bad_input(header_100k_declarations_last_bad SPECS many.decl=many_decls:100000
  ARGS header many.decl -o out.cuh)
fdlink_bad_input(link_100k_declarations_last_bad SPECS many.decl=many_decls:100000 ${CALLER} ${MUL}
  ARGS link -arch=sm_90 --decl many.decl -o app.cubin caller.ptx mul.ptx)

# ---- names with spaces and bytes that are not UTF-8 ------------------------------------------
fdlink_bad_input(check_path_with_spaces SPECS ${OK_DECL} "my dir/not ptx.ptx=random:64"
  ARGS check --decl ok.decl "my dir/not ptx.ptx")
fdlink_bad_input(link_output_folder_with_spaces_missing SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o "no such/app.cubin" caller.ptx mul.ptx)
fdlink_bad_input(header_name_with_a_space SPECS "sp.decl=decl_text:my~func:~int32(int32)"
  ARGS header sp.decl -o out.cuh)
string(ASCII 255 _ff)
fdlink_bad_input(inspect_name_not_utf8 SPECS "bad%ff.ptx=random:64" ARGS inspect "bad${_ff}.ptx")
fdlink_bad_input(link_name_not_utf8 SPECS ${CALLER} "bad%ff.cubin=empty"
  ARGS link -arch=sm_90 -o app.cubin caller.ptx "bad${_ff}.cubin")
fdlink_bad_input(header_decl_name_not_utf8 SPECS "d%ff.decl=decl_text:f:~int32(int33)"
  ARGS header "d${_ff}.decl" -o out.cuh)
