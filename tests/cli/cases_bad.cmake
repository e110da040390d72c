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
# named before the link (issue 40: before, the first line, then ptxas's log as nvJitLink gives it)
fdlink_bad_input(link_ptx_newer_than_the_linker SPECS ${CALLER} new.ptx=ptx_version:99.9
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

# ---- what real machines put at a path (issue 22, classes 2, 3, 5, 6, 7, 9) -------------------
# Inputs that are no files: a FIFO (nothing writes it: an open that blocks would hang), a socket,
# device nodes (/dev/zero never ends), folders and symlinks to any of them. Each is refused with
# one line naming it and what it is; nothing waits.
set(LTO caller.ltoir=copy:fx/caller.ltoir mul.ltoir=copy:fx/mul.ltoir)
fdlink_bad_input(check_fifo_ptx SPECS ${OK_DECL} p.ptx=fifo ARGS check --decl ok.decl p.ptx)
fdlink_bad_input(check_fifo_decl SPECS p.decl=fifo ${OK_PTX} ARGS check --decl p.decl ok.ptx)
fdlink_bad_input(header_fifo_decl SPECS p.decl=fifo ARGS header p.decl -o out.cuh)
fdlink_bad_input(link_fifo_input SPECS ${CALLER} p.ptx=fifo
  ARGS link -arch=sm_90 -o out.cubin caller.ptx p.ptx)
fdlink_bad_input(link_fifo_decl SPECS ${CALLER} ${MUL} p.decl=fifo
  ARGS link -arch=sm_90 --decl p.decl -o out.cubin caller.ptx mul.ptx)
fdlink_bad_input(inspect_fifo SPECS p.cubin=fifo ARGS inspect p.cubin)
fdlink_bad_input(embed_fifo_input SPECS p.cubin=fifo ARGS embed -o out.c p.cubin)
fdlink_bad_input(check_socket_ptx SPECS ${OK_DECL} s.ptx=socket ARGS check --decl ok.decl s.ptx)
fdlink_bad_input(header_socket_decl SPECS s.decl=socket ARGS header s.decl -o out.cuh)
fdlink_bad_input(link_socket_input SPECS ${CALLER} s.ptx=socket
  ARGS link -arch=sm_90 -o out.cubin caller.ptx s.ptx)
fdlink_bad_input(inspect_socket SPECS s.cubin=socket ARGS inspect s.cubin)
fdlink_bad_input(embed_socket_input SPECS s.cubin=socket ARGS embed -o out.c s.cubin)
fdlink_bad_input(check_dev_zero_ptx SPECS ${OK_DECL} ARGS check --decl ok.decl /dev/zero)
fdlink_bad_input(check_dev_null_decl SPECS ${OK_PTX} ARGS check --decl /dev/null ok.ptx)
fdlink_bad_input(header_dev_zero_decl ARGS header /dev/zero -o out.cuh)
fdlink_bad_input(link_dev_zero_input SPECS ${CALLER}
  ARGS link -arch=sm_90 -o out.cubin caller.ptx /dev/zero)
fdlink_bad_input(link_dev_urandom_input SPECS ${CALLER}
  ARGS link -arch=sm_90 -o out.cubin caller.ptx /dev/urandom)
fdlink_bad_input(inspect_dev_null ARGS inspect /dev/null)
fdlink_bad_input(embed_dev_zero_input ARGS embed -o out.c /dev/zero)
fdlink_bad_input(inspect_mknod_chrdev SPECS n.cubin=chrdev:1:3 ARGS inspect n.cubin)
fdlink_bad_input(check_mknod_chrdev_decl SPECS z.decl=chrdev:1:5 ${OK_PTX}
  ARGS check --decl z.decl ok.ptx)
fdlink_bad_input(link_mknod_blkdev_input SPECS ${CALLER} b.ptx=blkdev:7:200
  ARGS link -arch=sm_90 -o out.cubin caller.ptx b.ptx)
fdlink_bad_input(check_symlink_to_fifo SPECS ${OK_DECL} p=fifo l.ptx=symlink:p
  ARGS check --decl ok.decl l.ptx)
fdlink_bad_input(link_symlink_to_dev_zero SPECS ${CALLER} z.ptx=symlink:/dev/zero
  ARGS link -arch=sm_90 -o out.cubin caller.ptx z.ptx)
fdlink_bad_input(inspect_symlink_to_folder SPECS d=dir l.cubin=symlink:d ARGS inspect l.cubin)
fdlink_bad_input(header_symlink_to_socket SPECS s=socket l.decl=symlink:s ARGS header l.decl -o out.cuh)
fdlink_bad_input(link_symlink_to_fifo_decl SPECS ${CALLER} ${MUL} p=fifo l.decl=symlink:p
  ARGS link -arch=sm_90 --decl l.decl -o out.cubin caller.ptx mul.ptx)
# run's argument files (TYPE[N]@FILE) and --expect files, read before any GPU is needed
set(RUN run -arch=sm_90 caller.ptx mul.ptx -k multiply_vectors)
fdlink_bad_input(run_fifo_argument_file SPECS ${CALLER} ${MUL} p=fifo
  ARGS ${RUN} f32[4]=iota f32[4]@p f32[4]=iota i32:4)
fdlink_bad_input(run_dev_zero_argument_file SPECS ${CALLER} ${MUL}
  ARGS ${RUN} f32[4]=iota f32[4]@/dev/zero f32[4]=iota i32:4)
fdlink_bad_input(run_fifo_expect_file SPECS ${CALLER} ${MUL} p=fifo
  ARGS ${RUN} f32[4]=iota f32[4]=iota f32[4]=iota i32:4 --expect 0=p)
fdlink_bad_input(run_socket_expect_file SPECS ${CALLER} ${MUL} s=socket
  ARGS ${RUN} f32[4]=iota f32[4]=iota f32[4]=iota i32:4 --expect 0=s)
# a header a CUDA C input includes, when NVRTC compiles it: refused before NVRTC opens it
fdlink_bad_input(link_cuda_includes_a_fifo SPECS "k.cu=decl_text:#include~\"p.h\"" p.h=fifo
  ARGS link -arch=sm_90 -o out.cubin k.cu)

# /proc files say 0 bytes and hold more: read to the end, they are what they hold (class 7)
fdlink_bad_input(check_proc_status_decl SPECS ${OK_PTX} ARGS check --decl /proc/self/status ok.ptx)
fdlink_bad_input(header_proc_status_decl ARGS header /proc/self/status -o out.cuh)
fdlink_bad_input(check_proc_status_ptx SPECS ${OK_DECL} ARGS check --decl ok.decl /proc/self/status)
fdlink_bad_input(inspect_proc_status ARGS inspect /proc/self/status)
fdlink_bad_input(link_proc_status_input SPECS ${CALLER}
  ARGS link -arch=sm_90 -o out.cubin caller.ptx /proc/self/status)

# embed's inputs have a bound, which says how to raise it
fdlink_bad_input(embed_over_the_limit ENV FDLINK_EMBED_MAX_SIZE=1K SPECS mul.cubin=copy:fx/mul.cubin
  ARGS embed -o out.c mul.cubin)
fdlink_bad_input(embed_over_the_limit_together ENV FDLINK_EMBED_MAX_SIZE=1K
  SPECS a.ptx=copy:data/link/mul.ptx b.ptx=copy:data/link/mul.ptx
  ARGS embed -o out.c a=a.ptx b=b.ptx)

# Outputs at special paths: a character device or a FIFO is written into, never replaced; a
# symlink to a regular file has its target replaced; anything else is refused before anything
# is written (class 3)
fdlink_bad_input(link_output_dev_null SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o /dev/null caller.ptx mul.ptx)
fdlink_bad_input(header_output_dev_null SPECS ${OK_DECL} ARGS header ok.decl -o /dev/null)
fdlink_bad_input(embed_output_dev_null SPECS mul.cubin=copy:fx/mul.cubin
  ARGS embed -o /dev/null mul.cubin)
fdlink_bad_input(header_output_dev_stdout SPECS "d.decl=decl_text:f:~int32(int32)"
  ARGS header d.decl -o /dev/stdout)
fdlink_bad_input(header_output_dev_full SPECS ${OK_DECL} ARGS header ok.decl -o /dev/full)
fdlink_bad_input(link_output_dev_full SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o /dev/full caller.ptx mul.ptx)
fdlink_bad_input(embed_output_dev_full SPECS mul.cubin=copy:fx/mul.cubin
  ARGS embed -o /dev/full mul.cubin)
fdlink_bad_input(link_output_symlink_to_dev_null SPECS ${CALLER} ${MUL} out.cubin=symlink:/dev/null
  ARGS link -arch=sm_90 -o out.cubin caller.ptx mul.ptx)
fdlink_bad_input(header_output_symlink_to_a_file SPECS ${OK_DECL} real.cuh=empty out.cuh=symlink:real.cuh
  ARGS header ok.decl -o out.cuh)
fdlink_bad_input(header_output_dangling_symlink SPECS ${OK_DECL} out.cuh=symlink:nowhere/x.cuh
  ARGS header ok.decl -o out.cuh)
fdlink_bad_input(header_output_symlink_to_a_folder SPECS ${OK_DECL} d=dir out.cuh=symlink:d
  ARGS header ok.decl -o out.cuh)
fdlink_bad_input(header_output_socket SPECS ${OK_DECL} out.cuh=socket ARGS header ok.decl -o out.cuh)
fdlink_bad_input(link_output_socket SPECS ${CALLER} ${MUL} out.cubin=socket
  ARGS link -arch=sm_90 -o out.cubin caller.ptx mul.ptx)
fdlink_bad_input(header_output_fifo_nobody_reads SPECS ${OK_DECL} out.cuh=fifo
  ARGS header ok.decl -o out.cuh)
fdlink_bad_input(link_output_fifo_nobody_reads SPECS ${CALLER} ${MUL} out.cubin=fifo
  ARGS link -arch=sm_90 -o out.cubin caller.ptx mul.ptx)
fdlink_bad_input(link_output_mknod_blkdev SPECS ${CALLER} ${MUL} out.cubin=blkdev:7:200
  ARGS link -arch=sm_90 -o out.cubin caller.ptx mul.ptx)
fdlink_bad_input(header_output_mknod_null SPECS ${OK_DECL} out.cuh=chrdev:1:3
  ARGS header ok.decl -o out.cuh)
fdlink_bad_input(embed_output_mknod_full SPECS mul.cubin=copy:fx/mul.cubin out.c=chrdev:1:7
  ARGS embed -o out.c mul.cubin)

# All outputs of one command or none: the cubin is not left when the PTX cannot be written, nor
# the PTX when the cubin cannot (class 5)
fdlink_bad_input(link_emit_ptx_missing_folder SPECS ${LTO}
  ARGS link -arch=sm_90 --emit-ptx=no/such/out.ptx -o app.cubin caller.ltoir mul.ltoir)
fdlink_bad_input(link_emit_ptx_is_a_folder SPECS ${LTO} d=dir
  ARGS link -arch=sm_90 --emit-ptx=d -o app.cubin caller.ltoir mul.ltoir)
fdlink_bad_input(link_emit_ptx_dev_full SPECS ${LTO}
  ARGS link -arch=sm_90 --emit-ptx=/dev/full -o app.cubin caller.ltoir mul.ltoir)
fdlink_bad_input(link_output_dev_full_with_emit_ptx SPECS ${LTO}
  ARGS link -arch=sm_90 --emit-ptx=out.ptx -o /dev/full caller.ltoir mul.ltoir)
fdlink_bad_input(link_output_missing_folder_with_emit_ptx SPECS ${LTO}
  ARGS link -arch=sm_90 --emit-ptx=out.ptx -o no/such/app.cubin caller.ltoir mul.ltoir)

# An empty output name is a usage error (exit 2) (`-o ""` reads as `-o=` here: a CMake list
# drops an empty element)
fdlink_bad_input(link_o_equals_empty SPECS ${CALLER} ${MUL} ARGS link -arch=sm_90 -o= caller.ptx mul.ptx)
fdlink_bad_input(header_o_empty SPECS ${OK_DECL} ARGS header ok.decl -o=)
fdlink_bad_input(embed_o_empty SPECS mul.cubin=copy:fx/mul.cubin ARGS embed -o= mul.cubin)
fdlink_bad_input(link_emit_ptx_empty SPECS ${LTO}
  ARGS link -arch=sm_90 --emit-ptx= -o app.cubin caller.ltoir mul.ltoir)

# Standard output that cannot be written (a full disk) fails the command with one line (class 6)
fdlink_bad_input(inspect_stdout_full STDOUT /dev/full SPECS ${MUL} ARGS inspect mul.ptx)
fdlink_bad_input(check_verbose_stdout_full STDOUT /dev/full SPECS ${OK_DECL} ${OK_PTX}
  ARGS check -v --decl ok.decl ok.ptx)
fdlink_bad_input(header_stdout_full STDOUT /dev/full SPECS ${OK_DECL} ARGS header ok.decl)
fdlink_bad_input(help_stdout_full STDOUT /dev/full ARGS --help)
fdlink_bad_input(link_help_stdout_full STDOUT /dev/full ARGS link --help)
fdlink_bad_input(version_stdout_full STDOUT /dev/full ARGS --version)
fdlink_bad_input(cache_stats_stdout_full STDOUT /dev/full SPECS c=dir ARGS cache stats --dir c)
fdlink_bad_input(link_output_stdout_full STDOUT /dev/full SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o - caller.ptx mul.ptx)

# Names holding a newline or an escape are printed escaped: one line stays one line (class 9)
string(ASCII 10 _nl)
string(ASCII 27 _esc)
fdlink_bad_input(inspect_name_with_a_newline SPECS "a%0ab.ptx=random:64" ARGS inspect "a${_nl}b.ptx")
fdlink_bad_input(check_name_with_an_escape SPECS ${OK_DECL} "%1b[31mred.ptx=random:64"
  ARGS check --decl ok.decl "${_esc}[31mred.ptx")
fdlink_bad_input(link_missing_name_with_a_newline SPECS ${CALLER}
  ARGS link -arch=sm_90 -o out.cubin caller.ptx "no${_nl}such.ptx")
fdlink_bad_input(header_output_name_with_an_escape SPECS ${OK_DECL}
  ARGS header ok.decl -o "no/${_esc}[2Jclear.cuh")

# NVVM bitcode that is no module: libNVVM's refusal in one line (issue 34)
fdlink_bad_input(link_bitcode_not_a_module SPECS bad.bc=bitcode_bad
  ARGS link -arch=sm_90 -o out.cubin bad.bc)
fdlink_bad_input(inspect_bitcode_not_a_module SPECS bad.bc=bitcode_bad ARGS inspect bad.bc)

# ---- issue 35: option texts bounded before NVIDIA's libraries see them ------------------------
# A ptxas option of 99,964 bytes or more overflows a heap buffer inside nvJitLink's and NVRTC's
# ptxas (linkopts.c); fdlink refuses one over 64 KiB, whichever way it comes, as a usage error.
string(REPEAT "x" 70000 _fdl_long)
fdlink_bad_input(link_xptxas_too_long SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o app.cubin -Xptxas -${_fdl_long} caller.ptx mul.ptx)
fdlink_bad_input(link_xnvjitlink_xptxas_too_long SPECS ${CALLER} ${MUL}
  ARGS link -arch=sm_90 -o app.cubin -Xnvjitlink -Xptxas=-${_fdl_long} caller.ptx mul.ptx)

# ---- issue 35: size variables parsed strictly, naming the variable ----------------------------
fdlink_bad_input(cache_prune_max_size_variable_not_a_size SPECS c=dir
  ENV FDLINK_CACHE_MAX_SIZE=1.5G ARGS cache --dir c prune)
fdlink_bad_input(embed_max_size_variable_not_a_size SPECS mul.cubin=copy:fx/mul.cubin
  ENV FDLINK_EMBED_MAX_SIZE=1e9 ARGS embed -o out.c mul.cubin)
