#!/usr/bin/env bash
# rtf history end to end (issue 17): bench and speak append; list/show/export; `check`
# passes against itself and exits 2 against a baseline with a planted 10 % slower config;
# --no-history appends nothing; a bad db path or id is a clear error (exit 1). The file is
# --history-db on every command (rtf history also takes the older --db).
source "$(dirname "$0")/../e2e/lib.sh"
DB=$TMP/h.db
# three bench results on the mock workload: the baseline (rtf 0.50) twice, then 10 % slower
expect_rc 0 '' -- bench --workload mock --runs 5 --set 'rtf=0.50' --history-db "$DB"
expect_rc 0 '' -- bench --workload mock --runs 5 --set 'rtf=0.50' --history-db "$DB"
expect_rc 0 '' -- bench --workload mock --runs 5 --set 'rtf=0.55' --history-db "$DB"
expect_rc 0 '' -- bench --workload mock --runs 5 --set 'rtf=0.55' --no-history --history-db "$DB"
expect_rc 0 '3 result\(s\)' -- history list --history-db "$DB"
expect_rc 0 '3 result\(s\)' -- history list --db "$DB"     # the older name, an alias
expect_rc 0 'history-db' -- history list --help
# rtf report --history reads the same file under the same flag
expect_rc 0 '' -- report --history --metric rtf --history-db "$DB" -o "$TMP/series.md"
grep -q '0.5' "$TMP/series.md" && echo "ok: report --history --history-db" || { echo "FAIL: report --history"; fails=$((fails+1)); }
expect_rc 0 'within noise' -- history check --history-db "$DB" --baseline 1 --candidate 2
expect_rc 0 'within noise' -- history check --history-db "$DB" --baseline 2 --candidate 2
# the latest comparable result (#3, 10 % slower) against #1: a regression, exit 2
expect_rc 2 'REGRESSION' -- history check --history-db "$DB" --baseline 1
expect_rc 2 'Mann-Whitney' -- history check --history-db "$DB" --baseline 1
expect_rc 0 '' -- history check --history-db "$DB" --baseline 1 --metric first_audio_ms --noise 50
expect_rc 0 'rtf 0.5' -- history show 1 --history-db "$DB"
expect_rc 0 '' -- history export --history-db "$DB" --format csv -o "$TMP/h.csv"
expect_rc 0 '' -- history export --history-db "$DB" --format json -o "$TMP/h.json"
python3 - "$TMP/h.csv" "$TMP/h.json" <<'PY' && echo "ok: export" || { echo "FAIL: export"; fails=$((fails+1)); }
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 3, len(rows)
assert abs(float(rows[2]["rtf"]) / float(rows[0]["rtf"]) - 1.10) < 0.03, (rows[0]["rtf"], rows[2]["rtf"])
j = json.load(open(sys.argv[2]))
assert [r["id"] for r in j] == [1, 2, 3] and len(j[0]["runs"]["rtf"]) == 5
assert j[0]["machine_id"] == j[2]["machine_id"] and j[0]["kit_id"] == ""
PY
# speak appends a row with the kit's identity; its knobs are the run's
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
expect_rc 0 '' -- speak --models "$KIT" --text "Hello there." --max-audio-s 1 -o "$TMP/s.wav" -q --history-db "$DB" --d1 4
expect_rc 0 '4 result\(s\)' -- history list --history-db "$DB"
expect_rc 0 '1 result\(s\)' -- history list --history-db "$DB" --kind speak --knob d1=4
expect_rc 0 '"kit_id": "[0-9a-f]{16}"' -- history show 4 --history-db "$DB" --json
# errors: unknown id, no baseline, an unusable file
expect_rc 1 'no result #99' -- history show 99 --history-db "$DB"
expect_rc 1 'no result labelled' -- history check --history-db "$DB" --baseline nosuchlabel
echo "not a database, only some text that is long enough" > "$TMP/bad.db"
expect_rc 1 'bad.db' -- history list --history-db "$TMP/bad.db"
finish
