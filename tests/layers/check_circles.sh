#!/usr/bin/env bash
# No circle of files (label unit): no two object files call each other. For every pair of objects
# A and B among those given (archives are read member by member), A may use what B defines or B
# what A defines, not both. Two files that need each other are one concern split badly, or two
# concerns with a third hidden between them (issue 33). The include order is check_layers.sh's.
# With ORDER set (the objects' file names without .o or .c.o, bottom to top, e.g. python/src's
# files, which all include one header), every object must be in it and use only objects below it.
# With --order, no call runs against the modules' order either: given the objects of the build tree
# (their paths name their sources: .../fdlink_link.dir/link/src/checks/undefined.c.o), no object
# uses what an object above it defines (modules base abi link host gen cli; inside link/src the
# folders util cache libs formats core checks backends, then link.c), which the includes alone
# cannot show: a public header declares link.c's accessors to every folder below it (issue 42).
# usage: [ORDER="a b c"] check_circles.sh [--order] OBJECT_OR_ARCHIVE...
set -uo pipefail
order=0
if [ "${1:-}" = --order ]; then order=1; shift; fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
NM=${NM:-nm}
# "object symbol" lines: what each object defines (defs) and uses (uses); an object is named by
# its source's path where its own path says it (after "<target>.dir/"), else by its file name
for f in "$@"; do
  "$NM" -A --format=posix "$f" 2>/dev/null
done | awk -v defs="$tmp/defs" -v uses="$tmp/uses" '
  {
    # "archive[member.o]: name T value size" or "file.o: name U"
    obj = $1; sub(/:$/, "", obj); sub(/^.*\[/, "", obj); sub(/\]$/, "", obj)
    if (obj ~ /\.dir\//) { sub(/^.*\.dir\//, "", obj); sub(/^(\.\/)+/, "", obj) }
    else sub(/^.*\//, "", obj)
    if ($3 ~ /^[TDBRCVWG]$/) print obj, $2 > defs
    else if ($3 == "U") print obj, $2 > uses
  }'
[ -s "$tmp/defs" ] || { echo "check_circles: no symbols read from: $*"; exit 2; }
# the object pairs A -> B (A uses symbol S that B defines), with one such S
awk 'NR == FNR { def[$2] = $1; next } ($2 in def) && def[$2] != $1 { print $1, def[$2], $2 }' \
  "$tmp/defs" "$tmp/uses" | sort -u -k1,1 -k2,2 > "$tmp/calls"
cut -d' ' -f1,2 "$tmp/calls" > "$tmp/edges"
fail=0
while read -r a b; do
  if [[ "$a" < "$b" ]] && grep -qx "$b $a" "$tmp/edges"; then
    echo "circle: $a and $b call each other"; fail=1
  fi
done < "$tmp/edges"
if [ -n "${ORDER:-}" ]; then
  rank_of() { local x=${1##*/} i=0 n; x=${x%.o}; x=${x%.c}; for n in $ORDER; do [ "$n" = "$x" ] && { echo "$i"; return; }; i=$((i + 1)); done; echo -1; }
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
if [ "$order" = 1 ]; then
  # the rank of an object by its source path: module * 100 + its folder's inside link/src
  # (link.c: 99); -1 for an object whose path names no module (not ranked)
  awk '
    BEGIN { nm = split("base abi link host gen cli", m, " "); for (i = 1; i <= nm; i++) mod[m[i]] = i
            nf = split("util cache libs formats core checks backends", f, " ")
            for (i = 1; i <= nf; i++) fold[f[i]] = i }
    function rank(p,   parts, n, r) {
      n = split(p, parts, "/")
      if (!(parts[1] in mod)) return -1
      r = mod[parts[1]] * 100
      if (parts[1] == "link" && parts[2] == "src") r += n == 3 ? 99 : (parts[3] in fold ? fold[parts[3]] : 0)
      return r
    }
    { ra = rank($1); rb = rank($2)
      if (ra < 0 || rb < 0) { unranked++; next }
      ranked++
      if (int(rb / 100) > int(ra / 100) || (int(ra / 100) == int(rb / 100) && rb > ra)) {
        print "against the order: " $1 " calls " $2 " (" $3 ")"; bad++
      } }
    END { if (!bad) printf "calls: %d file pairs in the order (modules base abi link host gen cli; link/src util cache libs formats core checks backends, link.c): none runs up it\n", ranked
          if (unranked) printf "calls: %d file pairs not ranked (a path that names no module)\n", unranked
          exit bad ? 1 : 0 }' "$tmp/calls" || fail=1
fi
exit "$fail"
