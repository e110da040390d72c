#!/usr/bin/env bash
# The layer order (docs/design.md), checked on the sources (label unit): every #include "..." of
# a file resolves to its own layer or one below it.
#  - modules, bottom to top: base abi link host gen cli (cli/ may use every module);
#  - inside link/src, folders by concern, bottom to top: util cache libs formats core checks
#    backends, then link.c at the top of link/src.
# The build enforces the module order too (each module is an object library that sees only its
# own and lower modules' headers, so an upward include does not compile); this check also covers
# link/src's folders (all on link's include path) and headers no file compiles yet, and names
# the offending line. usage: check_layers.sh SOURCE_DIR
set -uo pipefail
cd "${1:-.}" || exit 2
modules=(base abi link host gen cli)
folders=(util cache libs formats core checks backends)
index_of() { local x=$1 i; shift; local a=("$@"); for i in "${!a[@]}"; do [ "${a[$i]}" = "$x" ] && { echo "$i"; return; }; done; echo -1; }
# the layer of a path: "module" and, inside link/src, the folder's rank (top of link/src: 99)
layer_of_path() {
  local p=$1 m rest f
  m=${p%%/*}
  if [ "$m" = link ] && [[ $p == link/src/* ]]; then
    rest=${p#link/src/}
    if [[ $rest == */* ]]; then f=${rest%%/*}; echo "link $(index_of "$f" "${folders[@]}")"; else echo "link 99"; fi
  else
    echo "$m -"
  fi
}
# where a quoted include name lives (the first match in the order modules, then link's folders)
resolve() {
  local name=$1 m f
  for m in "${modules[@]}"; do
    for f in "$m/src/$name" "$m/include/$name" "$m/$name"; do [ -f "$f" ] && { echo "$f"; return; }; done
    if [ "$m" = link ]; then
      for f in "${folders[@]}"; do [ -f "link/src/$f/$name" ] && { echo "link/src/$f/$name"; return; }; done
    fi
  done
}
fail=0 checked=0
while IFS= read -r file; do
  checked=$((checked + 1))
  read -r fm fr < <(layer_of_path "$file")
  frank=$(index_of "$fm" "${modules[@]}")
  while IFS=: read -r line inc; do
    name=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$inc")
    if [ -f "$(dirname "$file")/$name" ]; then target="$(dirname "$file")/$name"; else target=$(resolve "$name"); fi
    [ -n "$target" ] || continue   # a generated or system header
    read -r tm tr < <(layer_of_path "$target")
    trank=$(index_of "$tm" "${modules[@]}")
    if [ "$trank" -gt "$frank" ]; then
      echo "$file:$line: includes $target, of $tm/, above $fm/ (modules: ${modules[*]})"; fail=1
    elif [ "$fm" = link ] && [ "$tm" = link ] && [ "$fr" != - ] && [ "$tr" != - ] && [ "$tr" -gt "$fr" ]; then
      echo "$file:$line: includes $target, a folder above its own in link/src (order: ${folders[*]}, then link.c)"; fail=1
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
done < <(for m in "${modules[@]}"; do find "$m" -name '*.[ch]' -not -path '*/build*'; done | sort)
[ "$fail" = 0 ] && echo "layers: $checked files (modules ${modules[*]}; link/src ${folders[*]}): no include runs up the order"
exit "$fail"
