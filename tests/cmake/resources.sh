#!/usr/bin/env bash
# ctest spreading GPU tests over the GPUs, end to end, with the mock driver's three GPUs (label
# cmake): `fdlink resource-spec` writes the spec (parsed here by CMake's string(JSON)); a project
# of fdlink_add_test(... GPU) tests runs under `ctest -j 6 --resource-spec-file`, every test opens
# fdl_device_open(-1) and must get the GPU ctest assigned to it, and the tests spread over all
# three. Also: the spec without a driver lists no GPUs, and without a spec the tests use device 0.
# usage: resources.sh FDLINK_EXE WHICH_DEVICE_EXE MOCK_DRIVER FDLINK_SOURCE_DIR WORK_DIR
set -euo pipefail
fdlink=$1 which=$2 mock=$3 src=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
log="$work/log"
fail() { echo "resources test: $*"; exit 1; }

# no driver: a valid spec with no GPUs, and a note saying why
FDLINK_LIBCUDA=/nonexistent/libcuda.so.1 "$fdlink" resource-spec -o "$work/none.json" 2>"$log" ||
  { cat "$log"; fail "resource-spec without a driver failed"; }
grep -q "^fdlink: note: cannot load /nonexistent/libcuda.so.1" "$log" || { cat "$log"; fail "no note on stderr"; }
cmake -DSPEC="$work/none.json" -DGPUS=0 -DSLOTS=1 -P "$here/resources/check_spec.cmake"

export FDLINK_LIBCUDA="$mock" MOCK_CUDA_DEVICES=3
unset FDLINK_DEVICE CTEST_RESOURCE_GROUP_COUNT
"$fdlink" resource-spec --slots 2 -o "$work/gpus.json"
cmake -DSPEC="$work/gpus.json" -DGPUS=3 -DSLOTS=2 -P "$here/resources/check_spec.cmake"

cmake -S "$here/resources" -B "$work/b" -DFDLINK_FUNCTIONS="$src/cmake/fdlinkFunctions.cmake" \
  -DWHICH_DEVICE="$which" >"$log" 2>&1 || { cat "$log"; fail "configure failed"; }
ctest --test-dir "$work/b" -j 6 --resource-spec-file "$work/gpus.json" -V >"$log" 2>&1 ||
  { cat "$log"; fail "ctest with the resource spec failed"; }
grep -E "which_device: device|tests passed" "$log"
used=$(grep -o "which_device: device [0-9]* (CTEST" "$log" | awk '{print $3}' | sort -u | tr '\n' ' ')
[ "$used" = "0 1 2 " ] || fail "the tests used devices '$used', expected all of 0 1 2"
grep -q "which_device: device [0-9]* (CTEST_RESOURCE_GROUP_0_GPUS=id:[0-2],slots:2)" "$log" ||
  fail "the SLOTS 2 test did not get two slots"
grep -q "which_device: device 0 (CTEST_RESOURCE_GROUP_0_GPUS=unset)" "$log" ||
  fail "the ALL_GPUS test was given a resource group"

# without a spec, ctest assigns nothing: device 0 (or FDLINK_DEVICE)
FDLINK_DEVICE=1 ctest --test-dir "$work/b" -j 2 -V -R one_slot_1 >"$log" 2>&1 || { cat "$log"; fail "ctest without a spec failed"; }
grep -q "which_device: device 1 (CTEST_RESOURCE_GROUP_0_GPUS=unset)" "$log" || { cat "$log"; fail "without a spec FDLINK_DEVICE was not used"; }
echo "ctest spread the GPU tests over the 3 GPUs of the spec; each opened the GPU it was assigned"
