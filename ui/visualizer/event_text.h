// What a learner reads about one trace event: the hover tooltip and the details panel.
#pragma once

#include <QString>
#include <cstdint>

#include "pd/trace.h"

namespace pd::vis {

// "forward", "reduce-scatter step", ... as words rather than identifiers.
QString kind_text(pd::EventKind kind);
// Rich text (HTML subset QToolTip and QLabel understand). Times are shown relative to
// `origin_ns`, the same origin as the ruler.
QString describe_event(const pd::TraceEvent& e, std::int64_t origin_ns);

}  // namespace pd::vis
