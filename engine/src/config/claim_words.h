// A claim in a learner's words: what each metric is called on screen, how its values read
// (milliseconds, percentages, bytes), and what a comparison run changed.
#pragma once

#include <string>
#include <string_view>

namespace pd {

// "Peak activation memory", "Pipeline bubble": the metric's name on screen.
std::string metric_words(std::string_view metric);
// A value of the metric as a learner reads it: "12.4 ms", "27.3%", "3.1 MiB", "4".
// `ratio`: the value is one figure over another (a plain number, "9.8x").
std::string value_words(std::string_view metric, double value, bool ratio);
// (variant_words, the compare_with override in words, is public: pd/expectations.h.)

}  // namespace pd
