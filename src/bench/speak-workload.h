#pragma once
// The `speak` workload of `rtf bench` (workload.h): the real speak path on a kit, its
// knobs the speak knob table's (speak/knobs.h) plus config=FILE, the quality gates on
// every run (twin-aware: level/peak/DC/speech-likeness checks off for noise audio).
#include "bench/workload.h"
#include "speak/speak-config.h"

namespace rtf::bench {

WorkloadInfo speak_workload_info();

// The speak configuration a knob list gives (defaults, then config=FILE, then the knobs;
// finalized), as the workload builds it: throws rtf::Error(Usage) naming an unknown or bad
// knob or a missing input. Loads nothing (rtf tune checks its base with it before any trial).
speak::SpeakConfig speak_config(const Knobs &knobs);

}  // namespace rtf::bench
