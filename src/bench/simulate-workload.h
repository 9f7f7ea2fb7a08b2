#pragma once
// The simulate workload: the real pipeline (src/pipeline) with synthetic stages, exactly
// what `rtf simulate` runs, measured under the bench protocol.
//
// Knobs (defaults as `rtf simulate`): cost=llm=100ms,tts=300ms,t2w=300ms, cost-type=wait,
// chunks=20, chunk-ms=1000, schedule=pipelined, d1=16, d2=16, jitter-ms=0, cpus= (none),
// clock=real|virtual, profile=on|off, and
//   fail=STAGE@N   the named stage throws on its N-th input item (0-based) in every run:
//                  a forced stage failure, to test that the protocol reports it (exit 3).
// Synthetic stages make no audio, so quality is "not checked" (quality_note says so).
#include <memory>

#include "bench/workload.h"

namespace rtf::bench {

WorkloadInfo simulate_workload_info();
std::unique_ptr<Workload> make_simulate_workload(const Knobs &knobs);

}  // namespace rtf::bench
