#pragma once
// The `speak` workload of `rtf bench` (workload.h): the real speak path on a kit, its
// knobs the speak knob table's (speak/knobs.h) plus config=FILE, the quality gates on
// every run (twin-aware: level/peak/DC/speech-likeness checks off for noise audio).
#include "bench/workload.h"

namespace rtf::bench {

WorkloadInfo speak_workload_info();

}  // namespace rtf::bench
