#!/usr/bin/env bash
# rtf speak on a Vulkan device, end to end on a tiny twin (issue 34), each placement against
# the all-CPU run: the LLM on the device; both LM stages on it; every stage on it. Greedy, so
# the codes are the same up to where a near-tie may flip one (the device's numerics differ
# from the CPU's): Token2Wav on the CPU then makes bit-identical audio up to there, Token2Wav
# on the device audio close to it (16-bit WAVs); each stage's host <-> device copies in the
# profile where it is on the device.
# Skips (exit 77) where no Vulkan device exists, fails where RTF_TEST_REQUIRE names vulkan. CI: lavapipe, with RTF_ALLOW_SOFTWARE_DEVICE=1
# and GGML_VK_DISABLE_F16=1 (f32 tiles). 1.2 s of audio (two Token2Wav windows) and, for the
# every-stage run, no warm-up run (RTF_T2W_WARM_RUN=0): on lavapipe a full-shape Token2Wav
# window takes about a minute (the vocoder's im2col matmuls ~70 % of it), so this test takes
# ~2.5 min there.
source "$(dirname "$0")/../e2e/lib.sh"
dev=$("$RTF" devices --json | python3 -c '
import json, sys
d = [x["name"] for x in json.load(sys.stdin)["backend"]["devices"] if x.get("backend") == "Vulkan"]
print(d[0] if d else "")')
if [[ -z "$dev" ]]; then
  echo "skipped: no Vulkan device in this build or on this machine (rtf devices):"
  "$RTF" devices | sed 's/^/  /'
  # CI installs lavapipe: there a missing device is a failure (tests/common/require.h)
  [[ ",${RTF_TEST_REQUIRE:-}," == *,vulkan,* || ",${RTF_TEST_REQUIRE:-}," == *,all,* ]] &&
    { echo "FAIL: RTF_TEST_REQUIRE names vulkan, but no Vulkan device was found"; exit 1; }
  exit 77
fi
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
common=(speak --models "$KIT" -p "Hello there, how are you?" --greedy --max-tokens 30 --min-audio-s 1.2 --max-audio-s 1.2 -q)
expect_rc 0 '' -- "${common[@]}" -o "$TMP/cpu.wav" --json "$TMP/cpu.json"
RTF_T2W_WARM_RUN=0 expect_rc 0 '' -- "${common[@]}" --llm-device "$dev" --tts-device "$dev" --t2w-device-t2m "$dev" \
  --t2w-device-voc "$dev" -o "$TMP/all.wav" --json "$TMP/all.json"
expect_rc 0 '' -- "${common[@]}" --llm-device "$dev" --tts-device "$dev" -o "$TMP/lm.wav" --json "$TMP/lm.json"
expect_rc 0 '' -- "${common[@]}" --llm-device "$dev" -o "$TMP/mixed.wav" --json "$TMP/mixed.json"
python3 - "$TMP" "$dev" <<'PY' && echo "ok: placements and audio" || { echo "FAIL: placements or audio"; exit 1; }
import json, math, struct, sys, wave
tmp, dev = sys.argv[1], sys.argv[2]
def pcm(name):
    w = wave.open(f"{tmp}/{name}.wav"); n = w.getnframes()
    return struct.unpack("<%dh" % n, w.readframes(n))
def run(name): return json.load(open(f"{tmp}/{name}.json"))
def devices(j):
    c = j["config"]
    return {"llm": c["llm"]["placement"]["device"], "tts": c["tts"]["placement"]["device"],
            "t2m": c["t2w"]["device_t2m"], "voc": c["t2w"]["device_voc"]}
cpu, lm, mixed = pcm("cpu"), pcm("lm"), pcm("mixed")
jc, jl, jm = run("cpu"), run("lm"), run("mixed")
print("devices, LM stages:", devices(jl), "LLM only:", devices(jm))
assert devices(jl)["llm"] == dev and devices(jl)["tts"] == dev and dev not in (devices(jl)["t2m"], devices(jl)["voc"]), devices(jl)
assert devices(jm)["llm"] == dev and dev not in (devices(jm)["tts"], devices(jm)["t2m"], devices(jm)["voc"]), devices(jm)
n = jc["output"]["n_audio_codes"]
assert n > 0 and jl["output"]["n_audio_codes"] == n and jm["output"]["n_audio_codes"] == n
# Token2Wav on the CPU from the same codes gives the same samples, but the codes themselves
# come from the device's numerics (rows 1e-3 from the CPU's), where a greedy near-tie may flip
# one: from there on the two runs speak other codes. So, as a free run: the same length, the
# samples bit-equal up to a first difference (all of them when nothing flipped: seen, 3 of
# 3 runs), and that difference not in the first half (a reply or placement that is wrong
# parts at once; a flip that early is not what rows 1e-3 apart make).
def agreeing(x, y):
    m = min(len(x), len(y))
    return next((i for i in range(m) if x[i] != y[i]), m)
n_agree = {}
for name, x in (("mixed", mixed), ("lm", lm)):
    k = agreeing(x, cpu)
    n_agree[name] = k
    print("%s: %d of %d samples bit-equal to the CPU run's%s" % (name, k, len(cpu), "" if k == len(cpu) else " (then a flipped code)"))
    assert len(x) == len(cpu), (name, len(x), len(cpu))
    assert k == len(cpu) or k >= len(cpu) // 2, "%s: the audio parts from the CPU run's at sample %d of %d" % (name, k, len(cpu))
# the reply's text, from the LLM on the device, by the same rule: its first half the CPU's
rc_, rd_ = jc["output"]["reply_text"], jl["output"]["reply_text"]
assert rd_[:len(rc_) // 2] == rc_[:len(rc_) // 2], (rd_, rc_)
# Each stage's host <-> device copies are in the profile where that stage is on a device
def copied(j, key):  # KiB in all, or None when not profiled
    s = j["metrics"].get(key)
    return None if s is None else s["mean"] * s["n"]
for name, j, on in (("cpu", jc, ()), ("lm", jl, ("llm", "tts")), ("mixed", jm, ("llm",))):
    for stage in ("llm", "tts", "t2w"):
        kib = copied(j, stage + ".copy_kib")
        assert (kib is not None) == (stage in on), (name, stage, kib)
        if kib is not None:
            # at least one output row of logits per code (TTS) / reply step (LLM) came back
            assert kib * 1024 >= 4 * n, (name, stage, kib)
    if on:
        print("%s: copies %s" % (name, ", ".join("%s %.0f KiB" % (s, copied(j, s + ".copy_kib")) for s in on)))
allv, ja = pcm("all"), run("all")
m = ja["metrics"]
assert all(copied(ja, s + ".copy_kib") is not None for s in ("llm", "tts")), "every stage on the device: LM copies"
copied = m["t2w.copy_kib"]["mean"] * m["t2w.copy_kib"]["n"] * 1024
print("all on %s: Token2Wav copies %.0f KiB in %.1f ms over %d windows" % (dev, copied / 1024,
      m["t2w.copy_ms"]["mean"] * m["t2w.copy_ms"]["n"], m["t2w.copy_kib"]["n"]))
# at least the vocoder's spectra (2 x 9 floats per 4 samples) came back from the device
assert copied >= 4 * len(allv), (copied, len(allv))
assert all(v == dev for v in devices(ja).values()), devices(ja)
assert ja["output"]["n_audio_codes"] == n
assert len(allv) == len(cpu)
# the every-stage run has the LM stages' placement of the "lm" run (the same codes: the device
# computes alike run to run), so its audio is compared where those codes agree with the CPU's
k = n_agree["lm"]
s = sum(x * x for x in cpu[:k]); e = sum((x - y) ** 2 for x, y in zip(cpu[:k], allv[:k]))
snr = 200.0 if e == 0 else 10 * math.log10(s / e)
print("all on %s: %d samples, SNR %.1f dB vs the CPU run over the first %d (16-bit WAVs)" % (dev, len(allv), snr, k))
# measured 61.3 dB (63.4 with 2 s of audio; docs/vulkan.md): 16-bit rounding of both WAVs
# bounds it; a wrong window or state is far below
assert snr >= 55, snr
PY
finish
