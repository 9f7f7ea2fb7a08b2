#!/usr/bin/env bash
# The CLI's contract: version/devices work (text and JSON); bad use exits 1 naming the problem.
source "$(dirname "$0")/lib.sh"
expect_rc 0 'llama.cpp' -- --version
expect_rc 0 '"llama_cpp"' -- version --json
expect_rc 0 'CPU' -- devices
expect_rc 0 '"numa_nodes"' -- devices --json
"$RTF" devices --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["cpu"]["pus"]>=1; assert j["backend"]["devices"]' \
  && echo "ok: devices --json parses" || { echo "FAIL: devices --json"; fails=$((fails+1)); }
expect_rc 0 'Subcommands' -- --help
expect_rc 1 "unknown command 'frobnicate'" -- frobnicate
# an unknown command is an error naming it and the nearest command, even with --help (CLI11
# alone printed the main help and exited 0)
expect_rc 1 "^rtf: error: unknown command 'NOSUCH'; the nearest command is '[a-z0-9-]+'" -- NOSUCH --help
expect_rc 1 "unknown command 'speek'; the nearest command is 'speak'" -- speek --help
out=$("$RTF" NOSUCH --help 2>/dev/null)
[[ -z $out ]] && echo "ok: rtf NOSUCH --help prints no help on stdout" || { echo "FAIL: rtf NOSUCH --help printed: ${out:0:200}"; fails=$((fails+1)); }
expect_rc 0 'Usage: .*speak' -- speak --help
expect_rc 1 '--nope' -- devices --nope
expect_rc 1 '--nope' -- --nope
finish
