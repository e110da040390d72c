# Golden cases of `fdlink link` and `fdlink inspect`.

# link
fdlink_cli_test(link_help ARGS link --help)
fdlink_cli_test(link_ok PRESENT app.cubin
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
fdlink_cli_test(link_checked PRESENT app.cubin
  ARGS link -arch=sm_80 --decl check/functions.decl -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
fdlink_cli_test(link_abi_mismatch
  ARGS link -arch=sm_90 --decl check/functions.decl -o @OUT@/app.cubin check/caller.ptx check/wrong_width.ptx
  ABSENT app.cubin)
fdlink_cli_test(link_undefined_symbol
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/caller.ptx check/missing.ptx ABSENT app.cubin)
fdlink_cli_test(link_missing_arch ARGS link -o @OUT@/app.cubin check/caller.ptx)
fdlink_cli_test(link_bad_arch ARGS link -arch=sm90 -o @OUT@/app.cubin check/caller.ptx ABSENT app.cubin)
fdlink_cli_test(link_not_ptx ARGS link -arch=sm_90 -o @OUT@/app.cubin cli/notes.txt ABSENT app.cubin)
fdlink_cli_test(link_missing_input
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/nonexistent.ptx ABSENT app.cubin)
fdlink_cli_test(link_no_inputs ARGS link -arch=sm_90)
fdlink_cli_test(link_bad_opt_level ARGS link -arch=sm_90 -O7 check/caller.ptx)
