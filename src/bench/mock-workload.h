#pragma once
// The mock workload: deterministic figures without running anything (as hyperfine's
// MockExecutor), so the protocol, statistics, verdicts and exit codes are testable exactly.
//
// Knobs (defaults): rtf=0.5 (median RTF), spread=0.01 (relative: run i gets
// rtf * (1 + spread * o[i % 5]), o = {0, +1, -1, +0.5, -0.5}), first-audio-ms=300,
// starvation=0 (gap count per run), stages=llm=0.2,tts=0.3,t2w=0.5 (shares of rtf:
// rtf_stage.<s> = share * rtf, summed serially), outlier-run=-1 (that run's rtf x 3),
// fail-run=-1 (that run throws rtf::Error(Runtime), counting warm-ups from 0),
// quality=pass|fail|skip.
#include <memory>

#include "bench/workload.h"

namespace rtf::bench {

WorkloadInfo mock_workload_info();
std::unique_ptr<Workload> make_mock_workload(const Knobs &knobs);

}  // namespace rtf::bench
