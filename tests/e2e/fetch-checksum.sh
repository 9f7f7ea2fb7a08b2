#!/usr/bin/env bash
# scripts/fetch-llama.sh must refuse a corrupted or mismatching tarball and name both checksums.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$root/scripts/llama-cpp.lock"
printf 'not the release' >"$tmp/$NPM_PACKAGE-$NPM_VERSION.tgz"
out=$(RTF_DEPS_DIR="$tmp" RTF_LLAMA_CACHE_DIR="$tmp/cache" "$root/scripts/fetch-llama.sh" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 1 ]] || { echo "FAIL: exit $rc, want 1"; exit 1; }
grep -q "expected sha512: $NPM_SHA512" <<<"$out" || { echo "FAIL: expected checksum not named"; exit 1; }
actual=$(sha512sum "$tmp/$NPM_PACKAGE-$NPM_VERSION.tgz" | cut -d' ' -f1)
grep -q "actual   sha512: $actual" <<<"$out" || { echo "FAIL: actual checksum not named"; exit 1; }
[[ ! -e "$tmp/llama.cpp-$LLAMA_TAG" ]] || { echo "FAIL: sources unpacked from a bad tarball"; exit 1; }
echo "ok"
