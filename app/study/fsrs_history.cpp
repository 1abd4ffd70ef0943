#include "fsrs_history.h"

#include <QHash>
#include <algorithm>

#include "review_store.h"

namespace pd::study {

std::vector<FsrsCardHistory> fsrsHistories(const ReviewStore& store) {
    QHash<CardKey, FsrsCardHistory> byCard;
    for (const ReviewEntry& e : store.reviews())
        if (e.mode == StudyMode::Review)
            byCard[e.card].push_back({toTimePoint(e.reviewedAt), e.grade});
    std::vector<FsrsCardHistory> out;
    out.reserve(static_cast<std::size_t>(byCard.size()));
    for (auto& h : byCard) {
        std::stable_sort(h.begin(), h.end(),
                         [](const FsrsReview& a, const FsrsReview& b) { return a.at < b.at; });
        out.push_back(std::move(h));
    }
    // A stable order (the hash's is not), so a fit is reproducible.
    std::sort(out.begin(), out.end(), [](const FsrsCardHistory& a, const FsrsCardHistory& b) {
        return a.front().at < b.front().at;
    });
    return out;
}

}  // namespace pd::study
