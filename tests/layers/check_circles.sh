#!/usr/bin/env bash
# No circle of files (label unit): no two object files call each other. For every pair of objects
# A and B among those given (archives are read member by member), A may use what B defines or B
# what A defines, not both. Two files that need each other are one concern split badly, or two
# concerns with a third hidden between them (issue 33). The include order is check_layers.sh's.
# With ORDER set (the objects' file names without .o or .c.o, bottom to top, e.g. python/src's
# files, which all include one header), every object must be in it and use only objects below it.
# usage: [ORDER="a b c"] check_circles.sh OBJECT_OR_ARCHIVE...
set -uo pipefail
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
NM=${NM:-nm}
# "object symbol" lines: what each object defines (defs) and uses (uses)
for f in "$@"; do
  "$NM" -A --format=posix "$f" 2>/dev/null
done | awk -v defs="$tmp/defs" -v uses="$tmp/uses" '
  {
    # "archive[member.o]: name T value size" or "file.o: name U"
    obj = $1; sub(/:$/, "", obj); sub(/^.*\[/, "", obj); sub(/\]$/, "", obj); sub(/^.*\//, "", obj)
    if ($3 ~ /^[TDBRCVWG]$/) print obj, $2 > defs
    else if ($3 == "U") print obj, $2 > uses
  }'
[ -s "$tmp/defs" ] || { echo "check_circles: no symbols read from: $*"; exit 2; }
# the object pairs A -> B (A uses a symbol B defines), once each
awk 'NR == FNR { def[$2] = $1; next } ($2 in def) && def[$2] != $1 { print $1, def[$2] }' \
  "$tmp/defs" "$tmp/uses" | sort -u > "$tmp/edges"
fail=0
while read -r a b; do
  if [[ "$a" < "$b" ]] && grep -qx "$b $a" "$tmp/edges"; then
    echo "circle: $a and $b call each other"; fail=1
  fi
done < "$tmp/edges"
if [ -n "${ORDER:-}" ]; then
  rank_of() { local x=${1%.o} i=0 n; x=${x%.c}; for n in $ORDER; do [ "$n" = "$x" ] && { echo "$i"; return; }; i=$((i + 1)); done; echo -1; }
  while read -r o; do
    [ "$(rank_of "$o")" -ge 0 ] || { echo "order: $o is not in the order ($ORDER)"; fail=1; }
  done < <(cut -d' ' -f1 "$tmp/defs" | sort -u)
  while read -r a b; do
    ra=$(rank_of "$a") rb=$(rank_of "$b")
    if [ "$ra" -ge 0 ] && [ "$rb" -gt "$ra" ]; then
      echo "order: $a calls up into $b: $(awk -v a="$a" -v b="$b" 'NR == FNR { if ($1 == b) d[$2] = 1; next } $1 == a && ($2 in d) { printf "%s ", $2 }' "$tmp/defs" "$tmp/uses")(order, bottom to top: $ORDER)"; fail=1
    fi
  done < "$tmp/edges"
  [ "$fail" = 0 ] && echo "order: every object uses only those below it ($ORDER)"
fi
[ "$fail" = 0 ] && echo "circles: $(cut -d' ' -f1 "$tmp/defs" | sort -u | wc -l) objects, $(wc -l < "$tmp/edges") file pairs: none calls back"
exit "$fail"
