# Golden cases of `fdlink cache` and of the cache's effect on `fdlink link`. The sequences that
# need a populated cache (a miss then a hit, stats, verify of planted bad entries) are in
# tests/unit/test_cache_cli.c, which can prepare a directory first.

fdlink_cli_test(cache_help ARGS cache --help)
fdlink_cli_test(cache_no_command ARGS cache)
fdlink_cli_test(cache_unknown_command ARGS cache frobnicate)
fdlink_cli_test(cache_unknown_option ARGS cache --frobnicate stats)
fdlink_cli_test(cache_two_commands ARGS cache stats list)
fdlink_cli_test(cache_dir_option ARGS cache --dir @OUT@/c dir)
fdlink_cli_test(cache_dir_from_environment ENV FDLINK_CACHE_DIR=/somewhere/fdlink ARGS cache dir)
fdlink_cli_test(cache_stats_of_a_missing_directory
  ENV FDLINK_CACHE_MAX_SIZE=64M ARGS cache --dir @OUT@/none stats)
fdlink_cli_test(cache_stats_when_off
  ENV FDLINK_CACHE=0 FDLINK_CACHE_MAX_SIZE=1G ARGS cache --dir @OUT@/none stats)
fdlink_cli_test(cache_list_of_an_empty_directory ARGS cache --dir @OUT@ list)
fdlink_cli_test(cache_clear_of_an_empty_directory ARGS cache --dir @OUT@ clear)
fdlink_cli_test(cache_verify_of_an_empty_directory ARGS cache --dir @OUT@ verify)
fdlink_cli_test(cache_prune_of_an_empty_directory ARGS cache --dir @OUT@ prune --max-size 1M)
fdlink_cli_test(cache_prune_bad_size ARGS cache --dir @OUT@ prune --max-size 12X)
fdlink_cli_test(cache_max_size_without_prune ARGS cache --dir @OUT@ stats --max-size 1M)
fdlink_cli_test(cache_unreadable_directory ARGS cache --dir cli/notes.txt stats)

# link: --no-cache leaves the output as it was; a cache that cannot be used is one warning
fdlink_cli_test(link_no_cache PRESENT app.cubin
  ARGS link -arch=sm_90 --no-cache -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
fdlink_cli_test(link_cache_uncreatable PRESENT app.cubin
  ENV FDLINK_CACHE_DIR=cli/notes.txt/cache
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
fdlink_cli_test(link_cache_off_by_environment PRESENT app.cubin
  ENV FDLINK_CACHE=0 FDLINK_CACHE_DIR=cli/notes.txt/cache
  ARGS link -arch=sm_90 -o @OUT@/app.cubin check/caller.ptx check/conforming.ptx)
