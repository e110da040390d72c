#!/usr/bin/env bash
# Prepare .gpu/ in the project root (for a GPU host without package access): Criterion and its
# dependencies as .deb files, run-tests.sh and verify.sh, and the Python wheel.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git rev-parse --show-toplevel)
cd "$root"
mkdir -p .gpu/debs
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
pkgs="libcriterion3 libcriterion-dev libnanomsg5 libnanomsg-dev libgit2-1.5 libboxfort-dev libffi8 \
libmbedtls14 libmbedx509-1 libmbedcrypto7 libssh2-1 libhttp-parser2.9 libxxhash0 libxxhash-dev \
pkgconf pkgconf-bin libpkgconf3"
if ! ls .gpu/debs/libcriterion3_*.deb >/dev/null 2>&1; then
  [ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial)" ] || apt-get update -qq
  (cd .gpu/debs && apt-get download $pkgs 2>&1 | grep -v '^W:' || true)
fi
cp "$here/run-tests.sh" "$here/verify.sh" .gpu/
# the Python package as a wheel, for the GPU host's pytest (it has no package access)
if [ -f pyproject.toml ] && [ "${PREPARE_WHEEL:-1}" != 0 ]; then
  rm -rf .gpu/whl && python3 -m pip wheel -q . --no-deps -w .gpu/whl || echo "prepare.sh: the wheel did not build" >&2
fi
echo "prepared $(ls .gpu/debs | wc -l) packages in .gpu/debs and $(ls .gpu/whl 2>/dev/null | wc -l) wheel(s) in .gpu/whl; on the GPU host: bash .gpu/verify.sh (everything, one call) or bash .gpu/run-tests.sh [ctest args]"
