#!/usr/bin/env bash
# The layer order (docs/design.md), checked on the sources (label unit): every #include "..." of
# a module's file resolves to its own module or one below it. The build enforces the same (each
# module is an object library that sees only its own and lower modules' headers, so an upward
# include does not compile); this check also covers headers no file compiles yet and names the
# offending line. The order, bottom to top: abi link host gen, then the CLI (cli/), which may use
# every module.
# usage: check_layers.sh SOURCE_DIR
set -uo pipefail
src=${1:-.}
cd "$src" || exit 2
modules=(abi link host gen cli)

fail=0
# where a quoted include name lives: the module whose src/ or include/ holds it
module_of() {
  local name=$1 m
  for m in "${modules[@]}"; do
    [ -f "$m/src/$name" ] || [ -f "$m/include/$name" ] || [ -f "$m/$name" ] && { echo "$m"; return; }
  done
  echo ""
}
rank() { local i; for i in "${!modules[@]}"; do [ "${modules[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
checked=0
for m in "${modules[@]}"; do
  me=$(rank "$m")
  while IFS= read -r f; do
    checked=$((checked + 1))
    while IFS=: read -r line inc; do
      name=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$inc")
      # a header beside the file (same folder) is the file's own module
      [ -f "$(dirname "$f")/$name" ] && continue
      owner=$(module_of "$name")
      [ -n "$owner" ] || continue   # a generated or system header
      if [ "$(rank "$owner")" -gt "$me" ]; then
        echo "$f:$line: includes \"$name\" of $owner/, which lies above $m/ (order: ${modules[*]})"
        fail=1
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
  done < <(find "$m" -name '*.[ch]' -not -path '*/build*' | sort)
done
[ "$fail" = 0 ] && echo "layers: $checked files of ${modules[*]}: no include runs up the order"
exit "$fail"
