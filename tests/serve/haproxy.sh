#!/usr/bin/env bash
# The scale-out example (scripts/serve-haproxy.sh): two rtf serve instances on loopback
# behind HAProxy, rtf load through it; both instances must serve and every stream complete.
source "$(dirname "$0")/../e2e/lib.sh"
RTF="$RTF" "$(dirname "$0")/../../scripts/serve-haproxy.sh" "" 4 || { echo "FAIL: serve-haproxy.sh"; exit 1; }
echo "all checks passed"
