#!/usr/bin/env bash
# Faults: SIGKILL rounds, 16 concurrent writers, a hostile shared cache, a full file system (tests/faults/*.sh, with the
# fdlink of the build of tests/run.sh), and the library from 8 threads under ThreadSanitizer
# (tests/faults/threads.c, built in build-tsan with FDLINK_SANITIZE=thread).
# Usage: bash .ci/faults.sh [build folder, default build-tests]   (FDLINK_KILL_ROUNDS: 100)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tests}
fdlink=$build/cli/fdlink
failed=0
bash tests/faults/kill_rounds.sh "$fdlink" tests/data "${FDLINK_KILL_ROUNDS:-100}" || failed=1
bash tests/faults/concurrent.sh "$fdlink" tests/data 5 || failed=1
bash tests/faults/hostile_cache.sh "$fdlink" tests/data 4 16 || failed=1
bash tests/faults/full_disk.sh "$fdlink" tests/data
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || failed=1
tsan=${FDLINK_TSAN_DIR:-build-tsan}
if cmake -S . -B "$tsan" -G Ninja -DFDLINK_WERROR=ON -DFDLINK_REQUIRE_TESTS=ON \
     -DFDLINK_BUILD_DEVICE=OFF -DFDLINK_SANITIZE=thread >"$tsan.log" 2>&1 &&
   cmake --build "$tsan" -j "$(nproc)" --target fdlink_threads >>"$tsan.log" 2>&1; then
  if TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$tsan/tests/faults/fdlink_threads" tests/data 8 3; then
    echo "threads: ThreadSanitizer: 0 reports"
  else
    echo "threads: ThreadSanitizer reported a race, or a thread computed a wrong result" >&2
    failed=1
  fi
else
  cat "$tsan.log" >&2
  echo "faults.sh: the ThreadSanitizer build failed" >&2
  failed=1
fi
exit "$failed"
