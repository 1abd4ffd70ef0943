// The learner's review history as the FSRS optimizer reads it: per card (deck and card id),
// its scheduling reviews (review mode) in time order.
#pragma once

#include <vector>

#include "fsrs_optimizer.h"

namespace pd::study {

class ReviewStore;

std::vector<FsrsCardHistory> fsrsHistories(const ReviewStore& store);

}  // namespace pd::study
