// What the widgets share: the decks, the review store, the settings and the clock (injectable
// so tests can study "tomorrow" without waiting).
#pragma once

#include <QDateTime>
#include <functional>

#include "study/deck_library.h"
#include "study/review_store.h"
#include "study/study_session.h"

namespace pd::ui {

struct AppContext {
    study::DeckLibrary* library = nullptr;
    study::ReviewStore* store = nullptr;
    study::StudySettings settings;
    std::function<QDateTime()> now = [] { return QDateTime::currentDateTimeUtc(); };
};

}  // namespace pd::ui
