// paralleldeck-bench step: one training step of the engine beside PyTorch eager on the same CPU,
// same model, batch and optimizer, alternating rounds, medians of per-step times.
#pragma once

#include <string>
#include <vector>

namespace pd::cli {

struct StepBenchOptions {
    std::vector<std::string> sizes{"large", "card"};
    std::vector<std::string> strategies{"single", "dp"};
    int steps = 10;
    int rounds = 3;
    std::string optimizer = "adamw";
    std::string python;  // empty: $PD_PYTHON, else /usr/bin/python3
};

// Prints the figures; returns 0, or 2 for options it cannot run.
int bench_step(const StepBenchOptions& options, const char* argv0);

}  // namespace pd::cli
