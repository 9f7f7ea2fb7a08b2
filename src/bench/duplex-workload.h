#pragma once
// The `duplex` workload of `rtf bench` (workload.h): one duplex session per run
// (speak/duplex.h, as `rtf duplex` runs it) judged by the duplex analyzer
// (duplex-analysis.h), so the protocol, A/B, sweeps and the tuner apply to duplex.
// Knobs (rtf duplex's flags without '--'): models, input, interval, frames, speak-frames,
// speak-tokens, threads, startup-buffer-ms, max-gap-ms, encoder-queue-cap, prefill-queue-cap,
// tts-queue-cap, t2w-queue-cap, seed. Engines load once per config.
// Metrics per run: "rtf" = the worst speak turn's TTS RTF ([3], the pass rule is < 1 on every
// turn), "first_audio_ms" = first audio e2e P95 ([2]), "decision_latency_ms" {p50, p95, max}
// ([1]), "starvation" {count, total_ms} = playback gaps over the turns ([5]), "tts_rtf_mean",
// "audio_s", "duplex_verdict_code" (0 pass, 2 fail, 3 incomplete), "rtf_stage.<s>" = busy /
// audio. A run whose analyzer verdict is incomplete (a stage failed, no matched turn) is a
// failed run (rtf::Error(Runtime)). Quality: not checked (the output is the timeline; twins
// speak noise) — `quality_note` says so.
#include "bench/workload.h"

namespace rtf::bench {

WorkloadInfo duplex_workload_info();

}  // namespace rtf::bench
