#!/usr/bin/env bash
# rtf bench / compare / limits end to end: exit codes (0 met, 2 missed, 3 invalid, 1 usage),
# outputs (JSON schema, Markdown, CSV, trace), sweeps and A/B. Tiny simulate costs (tens of
# ms) so it runs in seconds; figures are measured, never asserted as wall-clock limits.
source "$(dirname "$0")/../e2e/lib.sh"
SIM=(bench --workload simulate --cost llm=5ms,tts=10ms,t2w=10ms --chunks 3 --chunk-ms 100 --warmup 1 --runs 3 --sample-ms 20)

expect_rc 0 'VALID' -- "${SIM[@]}" --json "$TMP/a.json" --md "$TMP/a.md" --csv "$TMP/a.csv" --trace "$TMP/t.json"
expect_rc 2 'TARGET MISSED' -- "${SIM[@]}" --target-rtf 0.01
expect_rc 3 'only 2 measured run' -- "${SIM[@]}" --runs 2
expect_rc 3 'forced failure' -- "${SIM[@]}" --fail t2w@1
expect_rc 1 '' -- "${SIM[@]}" --no-such-flag
expect_rc 1 'd1' -- "${SIM[@]}" --d1 0
expect_rc 1 'not a workload' -- bench --workload nope
expect_rc 1 'sample-ms' -- "${SIM[@]}" --sample-ms 900
expect_rc 0 '' -- bench --workload mock --set 'rtf=0.4' --runs 3 --json "$TMP/mock.json"

# JSON contract: schema, machine facts, versions, knobs, per-run records, leverage, duty cycle
python3 - "$TMP/a.json" <<'PY' || { echo "FAIL: bench JSON contract"; fails=$((fails+1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "rtfkit.bench/1", d["schema"]
assert d["exit_code"] == 0
for k in ("cpu", "backend"): assert k in d["machine"], k
assert d["machine"]["cpu"]["cores"] >= 1
assert d["versions"]["rtfkit"] and d["versions"]["llama_cpp"]
c = d["configs"][0]
assert c["verdict"]["status"] == "VALID"
assert c["knobs"]["chunks"] == "3"
assert c["workload_config"]["simulate"]["n_chunks"] == 3
assert len([r for r in c["runs"] if not r["warmup"]]) == 3
for m in ("rtf", "first_audio_ms", "starvation.count", "rtf_stage.t2w"):
    s = c["summary"][m]
    assert s["n"] == 3 and s["min"] <= s["median"] <= s["max"], (m, s)
assert any(r["what"] == "pipeline (overlap)" for r in c["leverage"])
assert "device.cpu.duty_cycle" in c["summary"], list(c["summary"])
# one raw run record per config (the last measured run): the report's per-chunk charts
with_rec = [r for r in c["runs"] if "run" in r]
assert len(with_rec) == 1 and with_rec[0] is [r for r in c["runs"] if not r["warmup"]][-1], [r["index"] for r in with_rec]
assert len(with_rec[0]["run"]["chunks"]) == 3 and len(with_rec[0]["run"]["stages"]) == 3
PY
# Issue 19: every per-run time uses that run's own origin (runs share one clock in a bench)
python3 - "$TMP/a.json" <<'PY' || { echo "FAIL: bench per-run times not from the run's origin"; fails=$((fails+1)); }
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["configs"][0]["runs"]
assert len(runs) == 4, len(runs)
for r in runs:
    m = r["metrics"]
    st = m["starvation"]
    assert st["jitter_ms"] == 0
    assert abs(st["playback_start_ms"] - m["first_audio_ms"]) < 1e-9, (r["index"], st["playback_start_ms"], m["first_audio_ms"])
    assert 0 <= st["playback_start_ms"] <= st["playback_end_ms"], st
rec = [r for r in runs if "run" in r][0]
run, wall = rec["run"], rec["metrics"]["wall_ms"]
assert run["t0_ms"] == 0 and run["clock_origin_ms"] > 0, (run["t0_ms"], run["clock_origin_ms"])
times = [run["end_ms"]]
for s in run["stages"]:
    for e in s["events"]: times += [e["start_ms"], e["end_ms"]]
    times += [x["start_ms"] for x in s["substages"] if x["start_ms"] is not None and x["start_ms"] >= 0]
for q in run["queues"]: times += [t for t, _ in q["depth"]]
for c in run["chunks"]:
    times.append(c["arrival_ms"])
    for sp in c["stages"].values(): times += [sp["start_ms"], sp["end_ms"]]
bad = [t for t in times if not (0 <= t <= wall + 1e-6)]
assert len(times) > 10 and not bad, (len(times), wall, bad[:5])
print("ok: %d run times within [0, %.1f ms]; playback_start == first_audio in %d runs" % (len(times), wall, len(runs)))
PY
expect_rc 0 '' -- report "$TMP/a.json" -o "$TMP/a.html"
grep -q 'Gantt' "$TMP/a.html" && ! grep -q 'no per-chunk records' "$TMP/a.html" && echo "ok: bench report has the Gantt" ||
  { echo "FAIL: bench report lacks the per-chunk charts"; fails=$((fails+1)); }
grep -q '^label,' "$TMP/a.csv" || { echo "FAIL: CSV header"; fails=$((fails+1)); }
grep -q 'Leverage' "$TMP/a.md" || { echo "FAIL: Markdown leverage"; fails=$((fails+1)); }
grep -q '"ph": *"C"' "$TMP/t.json" || { echo "FAIL: trace lacks device counters"; fails=$((fails+1)); }

# Sweep: one row per config
expect_rc 0 '' -- "${SIM[@]}" --sweep d1=1,4 --sweep 'cost=llm=5ms,tts=10ms,t2w=10ms;llm=5ms,tts=10ms,t2w=5ms' --csv "$TMP/s.csv"
rows=$(($(wc -l < "$TMP/s.csv") - 1))
[[ $rows -eq 4 ]] || { echo "FAIL: sweep gave $rows CSV rows, want 4"; fails=$((fails+1)); }

# A/B interleaved, and compare of two files
expect_rc 0 'A/B comparison' -- "${SIM[@]}" --ab 'd1=1' 'd1=4' --json "$TMP/ab.json" --md "$TMP/ab.md"
python3 -c "import json,sys; d=json.load(open('$TMP/ab.json')); assert d['mode']=='ab' and 'comparison' in d and len(d['configs'])==2" \
  || { echo "FAIL: A/B JSON"; fails=$((fails+1)); }
expect_rc 0 'VALID' -- "${SIM[@]}" --cost llm=5ms,tts=10ms,t2w=5ms --json "$TMP/b.json"
expect_rc 0 'cannot make|no significance test' -- compare "$TMP/a.json" "$TMP/b.json"
expect_rc 0 'knobs differ' -- compare "$TMP/a.json" "$TMP/mock.json"
expect_rc 1 'cannot read' -- compare "$TMP/a.json" "$TMP/none.json"
expect_rc 1 'row 3' -- compare "$TMP/a.json" "$TMP/b.json" --row-b 3

# One Markdown renderer (src/report): `rtf bench --md` and `rtf report` of the JSON it wrote
# are the same document (only the title differs: report names its input file), tables first.
for r in a ab; do
  expect_rc 0 '' -- report "$TMP/$r.json" -o "$TMP/$r-report.md"
  n=$(grep -c '^|' "$TMP/$r.md")
  if [[ $n -gt 10 ]] && diff <(grep '^|' "$TMP/$r.md") <(grep '^|' "$TMP/$r-report.md") >/dev/null \
     && diff <(tail -n +2 "$TMP/$r.md") <(tail -n +2 "$TMP/$r-report.md") >/dev/null; then
    echo "ok: bench --md and report give the same $n table rows ($r)"
  else
    echo "FAIL: bench --md and report differ ($r)"; diff "$TMP/$r.md" "$TMP/$r-report.md" | head -20; fails=$((fails+1))
  fi
done
grep -q '^### A/B comparison' "$TMP/ab.md" || { echo "FAIL: A/B Markdown lacks the comparison"; fails=$((fails+1)); }

# limits: small and fast here; the real figures come from a full run (see the issue note)
expect_rc 0 'read GiB/s' -- limits --threads 1 --bw-mib 8 --reps 1 --matmul-size 64 --gemv 256x256 --json "$TMP/l.json"
# our packed GEMM's row beside ggml's where the CPU runs it (AVX-512F or AVX2 + FMA), none elsewhere
python3 - "$TMP/l.json" <<'PY2' && echo "ok: limits' packed-f32 row" || { echo "FAIL: limits' packed-f32 row"; fails=$((fails+1)); }
import json, sys
rows = [m for m in json.load(open(sys.argv[1]))["matmul"] if m["type"] == "packed-f32"]
flags = set(open("/proc/cpuinfo").read().split())
isa = "avx512" if "avx512f" in flags else "avx2" if {"avx2", "fma"} <= flags else None
if isa is None:
    assert not rows, rows
else:
    assert len(rows) == 1 and rows[0]["gflops"] > 0 and rows[0]["kernel_isa"] == isa and "ggml_gflops" not in rows[0], rows
    assert rows[0]["m"] == 64 and rows[0]["n_threads"] == 1, rows
PY2
expect_rc 1 'not a directory' -- limits --models "$TMP/nope"
expect_rc 1 'types' -- limits --types q4
# '--json -' prints only the JSON
"$RTF" bench --workload mock --runs 3 --sample-ms 0 --json - 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' \
  || { echo "FAIL: bench --json - is not pure JSON"; fails=$((fails+1)); }
finish
