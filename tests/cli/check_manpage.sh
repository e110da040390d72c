#!/usr/bin/env bash
# fdlink(1) (label cli): the page built from docs/fdlink.1.in and the tool's help texts renders
# without a warning (groff -ww, where groff is installed), has a subsection for every command
# that `fdlink --help` lists, names every long option of every command's help, and documents
# every FDLINK_* environment variable that the library or the tool reads (found in the sources).
# usage: check_manpage.sh FDLINK MANPAGE SOURCE_DIR
set -uo pipefail
fdlink=$1 page=$2 src=$3
fail=0
[ -s "$page" ] || { echo "man page: $page missing or empty"; exit 1; }
if command -v groff >/dev/null 2>&1; then
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  [ -z "$warnings" ] || { echo "man page: groff warns:"; echo "$warnings"; fail=1; }
fi
commands=$("$fdlink" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p')
[ -n "$commands" ] || { echo "man page: 'fdlink --help' lists no commands"; exit 1; }
for c in $commands; do
  grep -qx "\.SS $c" "$page" || { echo "man page: no subsection for the command $c"; fail=1; }
  for opt in $("$fdlink" "$c" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    grep -qF -- "$opt" "$page" || grep -qF -- "$(sed 's/-/\\-/g' <<<"$opt")" "$page" ||
      { echo "man page: $c's option $opt is not in the page"; fail=1; }
  done
done
for v in $(grep -rhoE '"FDLINK_[A-Z0-9_]+"' "$src/abi" "$src/link" "$src/host" "$src/gen" \
             --include='*.c' --include='*.h' | tr -d '"' | sort -u); do
  case "$v" in *_) continue ;; esac   # a prefix (FDLINK_GENERATED_...), not a variable
  grep -q "^\.B $v\$" "$page" || { echo "man page: ENVIRONMENT lacks $v"; fail=1; }
done
[ "$fail" = 0 ] && echo "man page: $(wc -l <"$page") lines, $(echo $commands | wc -w) commands, clean"
exit "$fail"
