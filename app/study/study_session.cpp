#include "study_session.h"

#include <QHash>
#include <algorithm>
#include <map>

namespace pd::study {

namespace {

// Anki's default "learn ahead" limit: when nothing else is left, a card in a learning step that
// is due within this time is shown now rather than ending the session.
constexpr qint64 kLearnAheadMs = 20LL * 60 * 1000;

// SplitMix64: small, seedable and identical on every platform.
quint64 nextRandom(quint64& state) {
    quint64 z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

template <typename T>
void shuffle(QList<T>& list, quint64& state) {
    for (qsizetype i = list.size() - 1; i > 0; --i) {
        const auto j = static_cast<qsizetype>(nextRandom(state) % static_cast<quint64>(i + 1));
        list.swapItemsAt(i, j);
    }
}

bool isDue(const CardSchedule& s, const QDateTime& now) {
    return toDateTime(s.fsrs.due) <= now;
}

}  // namespace

// ---------------------------------------------------------------------------------- settings

QString formatInterval(qint64 seconds) {
    if (seconds < 60) return QStringLiteral("<1m");
    const double minutes = seconds / 60.0;
    if (minutes < 59.5) return QStringLiteral("%1m").arg(qRound(minutes));
    const double hours = minutes / 60.0;
    if (hours < 23.5) return QStringLiteral("%1h").arg(qRound(hours));
    const double days = hours / 24.0;
    if (days < 30.0) return QStringLiteral("%1d").arg(qRound(days));
    const double months = days / 30.4375;
    if (months < 12.0) return QStringLiteral("%1mo").arg(QString::number(months, 'f', 1));
    return QStringLiteral("%1y").arg(QString::number(days / 365.25, 'f', 1));
}

StudySettings StudySettings::load(const ReviewStore& store) {
    StudySettings s;
    bool ok = false;
    const double r = store.setting(QStringLiteral("desired_retention")).toDouble(&ok);
    if (ok && r >= 0.7 && r <= 0.99) s.desiredRetention = r;
    const int n = store.setting(QStringLiteral("new_per_day")).toInt(&ok);
    if (ok && n >= 0) s.newPerDay = n;
    const int v = store.setting(QStringLiteral("reviews_per_day")).toInt(&ok);
    if (ok && v >= 0) s.reviewsPerDay = v;
    s.fuzz = store.setting(QStringLiteral("fuzz"), QStringLiteral("1")) != QStringLiteral("0");
    s.showMeBeforeCheck =
        store.setting(QStringLiteral("show_me_before_check")) == QStringLiteral("1");
    const QString theme = store.setting(QStringLiteral("theme"));
    if (theme == QStringLiteral("light") || theme == QStringLiteral("dark")) s.theme = theme;
    s.ankiScheduling = store.setting(QStringLiteral("anki_scheduling"), QStringLiteral("1")) !=
                       QStringLiteral("0");
    const int hour = store.setting(QStringLiteral("next_day_starts_at")).toInt(&ok);
    if (ok && hour >= 0 && hour <= 23) s.nextDayStartsAt = hour;
    // 21 numbers within their bounds, or the defaults (a damaged value is not half used).
    const QStringList numbers =
        store.setting(QStringLiteral("fsrs_weights")).split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (numbers.size() == static_cast<qsizetype>(kFsrsWeightCount)) {
        FsrsWeights w{};
        bool valid = true;
        for (std::size_t i = 0; i < kFsrsWeightCount; ++i) {
            bool isNumber = false;
            w[i] = numbers[static_cast<qsizetype>(i)].toDouble(&isNumber);
            valid =
                valid && isNumber && w[i] >= fsrsLowerBounds()[i] && w[i] <= fsrsUpperBounds()[i];
        }
        if (valid) s.weights = w;
    }
    return s;
}

// One transaction: a failure or a kill part-way leaves every setting as it was.
bool StudySettings::save(ReviewStore& store, QString* error) const {
    const QString yes = QStringLiteral("1"), no = QStringLiteral("0");
    return store.setSettings(
        {
            {QStringLiteral("desired_retention"), QString::number(desiredRetention)},
            {QStringLiteral("new_per_day"), QString::number(newPerDay)},
            {QStringLiteral("reviews_per_day"), QString::number(reviewsPerDay)},
            {QStringLiteral("fuzz"), fuzz ? yes : no},
            {QStringLiteral("show_me_before_check"), showMeBeforeCheck ? yes : no},
            {QStringLiteral("theme"), theme},
            {QStringLiteral("anki_scheduling"), ankiScheduling ? yes : no},
            {QStringLiteral("next_day_starts_at"), QString::number(nextDayStartsAt)},
            {QStringLiteral("fsrs_weights"), weightsText(weights)},
        },
        error);
}

QString weightsText(const std::optional<FsrsWeights>& weights) {
    if (!weights) return QStringLiteral("");
    QStringList numbers;
    for (double w : *weights) numbers << QString::number(w, 'g', 8);
    return numbers.join(QLatin1Char(' '));
}

FsrsParams StudySettings::fsrsParams() const {
    FsrsParams p;
    p.desiredRetention = desiredRetention;
    p.enableFuzzing = fuzz;
    p.ankiIntervalOrder = ankiScheduling;
    p.ankiSameDayHard = ankiScheduling;
    if (weights) p.w = *weights;
    return p;
}

FsrsDayCounter ankiDayCounter(int startHour, const QTimeZone& zone) {
    return [startHour, zone](FsrsTimePoint t) -> long long {
        const QDateTime local = toDateTime(t).toTimeZone(zone);
        const QDate date =
            local.time().hour() < startHour ? local.date().addDays(-1) : local.date();
        return date.toJulianDay();
    };
}

FsrsDayCounter StudySettings::dayCounter(const QTimeZone& zone) const {
    if (!ankiScheduling) return {};
    return ankiDayCounter(nextDayStartsAt, zone);
}

QDateTime StudySettings::startOfStudyDay(const QDateTime& now, const QTimeZone& zone) const {
    const QDateTime local = now.toTimeZone(zone);
    if (!ankiScheduling) return QDateTime(local.date(), QTime(0, 0), zone).toUTC();
    const QDate day =
        local.time().hour() < nextDayStartsAt ? local.date().addDays(-1) : local.date();
    return QDateTime(day, QTime(nextDayStartsAt, 0), zone).toUTC();
}

DeckCounts countDeck(const Deck& deck, const ReviewStore& store, const QDateTime& now) {
    DeckCounts c;
    const QHash<QString, CardSchedule> all = store.schedules(deck.id);
    for (const Card& card : deck.cards) {
        const auto it = all.find(card.id);
        if (it == all.end()) {
            ++c.newCards;
        } else {
            ++c.learned;
            if (isDue(*it, now)) ++c.due;
        }
    }
    return c;
}

Rating suggestedGrade(bool correct, std::optional<int> confidence, bool hinted) {
    if (!correct) return Rating::Again;
    if (hinted || confidence == kConfidenceGuessing) return Rating::Hard;
    return Rating::Good;
}

bool CardFilter::matches(const Card& card) const {
    if (!tag.isEmpty() && !card.tags.contains(tag)) return false;
    if (difficulty && card.difficulty != *difficulty) return false;
    return true;
}

// ---------------------------------------------------------------------------------- session

StudySession::StudySession(const Deck& deck, ReviewStore& store, const StudySettings& settings,
                           SessionOptions options, const QDateTime& now)
    : deck_(&deck),
      store_(&store),
      settings_(settings),
      options_(std::move(options)),
      scheduler_(settings.fsrsParams(), options_.seed),
      rngState_(options_.seed != 0 ? options_.seed
                                   : static_cast<quint64>(now.toMSecsSinceEpoch())) {
    scheduler_.setDayCounter(settings.dayCounter());
    if (options_.mode == StudyMode::Review) {
        const QHash<QString, CardSchedule> all = store.schedules(deck.id);
        // Today's work so far counts against the daily limits.
        int newToday = 0;
        int reviewsToday = 0;
        for (const ReviewEntry& e : store.reviews(settings.startOfStudyDay(now), now.addSecs(1))) {
            if (e.mode != StudyMode::Review || e.card.deckId != deck.id) continue;
            if (e.before)
                ++reviewsToday;
            else
                ++newToday;
        }
        QList<std::pair<FsrsTimePoint, int>> due;
        QList<int> fresh;
        for (int i = 0; i < deck.cards.size(); ++i) {
            // "Study now" with a concept (or difficulty) chosen reviews that part of the deck.
            if (!options_.filter.matches(deck.cards[i])) continue;
            const auto it = all.find(deck.cards[i].id);
            if (it == all.end()) {
                fresh.append(i);
            } else if (isDue(*it, now)) {
                due.append({it->fsrs.due, i});
            } else if (it->fsrs.state != CardState::Review &&
                       toDateTime(it->fsrs.due) <= now.addMSecs(kLearnAheadMs)) {
                learning_.append(i);
            }
        }
        std::stable_sort(due.begin(), due.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        const int reviewRoom = std::max(0, settings.reviewsPerDay - reviewsToday);
        for (int k = 0; k < due.size() && k < reviewRoom; ++k) queue_.append(due[k].second);
        const int newRoom = std::max(0, settings.newPerDay - newToday);
        for (int k = 0; k < fresh.size() && k < newRoom; ++k) queue_.append(fresh[k]);
    } else {
        QList<int> pool;
        for (int i = 0; i < deck.cards.size(); ++i) {
            // An exam question is multiple choice, answered without a run to wait for.
            const bool examable = !deck.cards[i].isNumeric();
            if (options_.filter.matches(deck.cards[i]) &&
                (options_.mode != StudyMode::MockExam || examable))
                pool.append(i);
        }
        shuffle(pool, rngState_);
        if (options_.mode == StudyMode::Practice) {
            queue_ = pool;
        } else {
            // Mock exam: interleave concepts round-robin so neighbouring questions differ.
            std::map<QString, QList<int>> byConcept;
            for (int i : pool) {
                const QStringList concepts = deck.cards[i].concepts();
                byConcept[concepts.isEmpty() ? QString() : concepts.first()].append(i);
            }
            QList<QString> order;
            for (const auto& [conceptName, cards] : byConcept) order.append(conceptName);
            shuffle(order, rngState_);
            for (qsizetype round = 0; queue_.size() < options_.examQuestions; ++round) {
                bool any = false;
                for (const QString& conceptName : order) {
                    const QList<int>& cards = byConcept[conceptName];
                    if (round < cards.size() && queue_.size() < options_.examQuestions) {
                        queue_.append(cards[round]);
                        any = true;
                    }
                }
                if (!any) break;
            }
        }
    }
    advance(now);
}

const Card* StudySession::current() const {
    return current_ < 0 ? nullptr : &deck_->cards[current_];
}

int StudySession::remaining() const {
    // A card answered with Then::Stay is done: it counts as answered, not as to go.
    const bool currentToGo = current_ >= 0 && !stayed_;
    return static_cast<int>(queue_.size() + learning_.size()) + (currentToGo ? 1 : 0);
}

int StudySession::returning() const {
    const bool currentReturns = current_ >= 0 && !stayed_ && seen_.contains(current_);
    return static_cast<int>(learning_.size()) + (currentReturns ? 1 : 0);
}

void StudySession::show(int cardIndex) {
    current_ = cardIndex;
    currentHinted_ = false;
    stayed_ = false;
    optionOrder_.clear();
    if (cardIndex < 0) return;
    // Drawn once per card: undo (and a card coming back) must not move the options about.
    if (const auto known = optionOrders_.constFind(cardIndex); known != optionOrders_.cend()) {
        optionOrder_ = *known;
        return;
    }
    for (int i = 0; i < deck_->cards[cardIndex].options.size(); ++i) optionOrder_.append(i);
    if (options_.shuffleOptions) shuffle(optionOrder_, rngState_);
    optionOrders_.insert(cardIndex, optionOrder_);
}

void StudySession::next(const QDateTime& now) {
    if (stayed_) advance(now);
}

void StudySession::advance(const QDateTime& now) {
    const QHash<QString, CardSchedule> all =
        learning_.isEmpty() ? QHash<QString, CardSchedule>() : store_->schedules(deck_->id);
    // The learning card due first, if any.
    int bestPos = -1;
    QDateTime bestDue;
    for (int k = 0; k < learning_.size(); ++k) {
        const auto it = all.find(deck_->cards[learning_[k]].id);
        const QDateTime due = it == all.end() ? now : toDateTime(it->fsrs.due);
        if (bestPos < 0 || due < bestDue) {
            bestPos = k;
            bestDue = due;
        }
    }
    if (bestPos >= 0 && bestDue <= now) {
        show(learning_.takeAt(bestPos));
    } else if (!queue_.isEmpty()) {
        show(queue_.takeFirst());
    } else if (bestPos >= 0 && bestDue <= now.addMSecs(kLearnAheadMs)) {
        show(learning_.takeAt(bestPos));
    } else {
        learning_.clear();
        show(-1);
    }
}

std::array<QDateTime, 4> StudySession::previewDue(const QDateTime& now) const {
    std::array<QDateTime, 4> out;
    const Card* card = current();
    if (!card) return out;
    const auto schedule = store_->schedule({deck_->id, card->id});
    const FsrsCard fsrs = schedule ? schedule->fsrs : makeNewFsrsCard(toTimePoint(now));
    const auto due = scheduler_.previewDue(fsrs, toTimePoint(now));
    for (std::size_t i = 0; i < due.size(); ++i) out[i] = toDateTime(due[i]);
    return out;
}

bool StudySession::answer(const QList<int>& chosen, std::optional<Rating> chosenGrade,
                          std::optional<int> confidence, qint64 durationMs, const QDateTime& now,
                          QString* error, Then then) {
    const Card* card = current();
    if (stayed_) {
        if (error) *error = QStringLiteral("this card's answer is already recorded");
        return false;
    }
    if (!card) {
        if (error) *error = QStringLiteral("the session has ended");
        return false;
    }
    return record(*card, card->isCorrectAnswer(chosen), chosen, chosenGrade, confidence, durationMs,
                  now, error, then);
}

bool StudySession::answerNumeric(bool correct, std::optional<Rating> chosenGrade,
                                 std::optional<int> confidence, qint64 durationMs,
                                 const QDateTime& now, QString* error, Then then) {
    const Card* card = current();
    if (stayed_) {
        if (error) *error = QStringLiteral("this card's answer is already recorded");
        return false;
    }
    if (!card || !card->isNumeric()) {
        if (error)
            *error = card ? QStringLiteral("the current card is not a numeric card")
                          : QStringLiteral("the session has ended");
        return false;
    }
    return record(*card, correct, {}, chosenGrade, confidence, durationMs, now, error, then);
}

bool StudySession::record(const Card& cardRef, bool correct, const QList<int>& chosen,
                          std::optional<Rating> chosenGrade, std::optional<int> confidence,
                          qint64 durationMs, const QDateTime& now, QString* error, Then then) {
    const Card* card = &cardRef;
    ReviewEntry e;
    e.card = {deck_->id, card->id};
    e.reviewedAt = now.toUTC();
    e.grade = chosenGrade.value_or(suggestedGrade(correct, confidence, currentHinted_));
    e.hinted = currentHinted_;
    e.chosen = chosen;
    std::sort(e.chosen.begin(), e.chosen.end());
    e.correct = correct;
    e.confidence = confidence;
    e.durationMs = durationMs;
    e.mode = options_.mode;
    bool requeue = false;
    if (options_.mode == StudyMode::Review) {
        e.before = store_->schedule(e.card);
        CardSchedule after =
            e.before.value_or(CardSchedule{makeNewFsrsCard(toTimePoint(now)), 0, 0});
        after.fsrs = scheduler_.review(after.fsrs, e.grade, toTimePoint(now));
        ++after.reps;
        if (e.grade == Rating::Again && e.before && e.before->fsrs.state == CardState::Review)
            ++after.lapses;
        e.after = after;
        requeue = after.fsrs.state != CardState::Review;
    }
    const qint64 id = store_->recordReview(e, error);
    if (id == 0) return false;

    const bool firstAnswer = !seen_.contains(current_);
    history_.append({current_, id, correct, requeue, firstAnswer, e.chosen});
    seen_.insert(current_);
    if (requeue) learning_.append(current_);
    ++answered_;
    if (correct) ++correctAnswers_;
    for (const QString& c : card->concepts()) {
        auto& s = scores_[c];
        s.second += 1;
        s.first += correct ? 1 : 0;
    }
    if (then == Then::Stay)
        stayed_ = true;
    else
        advance(now);
    return true;
}

bool StudySession::undo(QString* error) {
    if (history_.isEmpty()) {
        if (error) *error = QStringLiteral("nothing to undo in this session");
        return false;
    }
    const std::optional<ReviewEntry> last = store_->lastReview();
    if (!last || last->id != history_.last().logId) {
        if (error) *error = QStringLiteral("the last review was not made in this session");
        return false;
    }
    if (!store_->undoLastReview(error)) return false;
    const Done done = history_.takeLast();
    if (done.requeued) learning_.removeOne(done.cardIndex);
    if (done.firstAnswer) seen_.remove(done.cardIndex);
    // The card on screen goes back to the front of the queue, unless it is the one undone
    // (answered with Then::Stay and still current).
    if (current_ >= 0 && !stayed_) queue_.prepend(current_);
    --answered_;
    if (done.correct) --correctAnswers_;
    for (const QString& c : deck_->cards[done.cardIndex].concepts()) {
        auto& s = scores_[c];
        s.second -= 1;
        s.first -= done.correct ? 1 : 0;
    }
    show(done.cardIndex);
    return true;
}

Rating StudySession::suggestedGradeFor(const QList<int>& chosen,
                                       std::optional<int> confidence) const {
    const Card* card = current();
    return suggestedGrade(card && card->isCorrectAnswer(chosen), confidence, currentHinted_);
}

Rating StudySession::suggestedGradeForNumeric(bool correct, std::optional<int> confidence) const {
    return suggestedGrade(correct, confidence, currentHinted_);
}

void StudySession::finishNow(Unanswered unanswered) {
    QList<int> rest = queue_;
    if (current_ >= 0 && !stayed_) rest.prepend(current_);
    endedEarly_ = unanswered == Unanswered::LeaveOut;
    for (int i : rest) {
        ++unanswered_;
        if (endedEarly_) continue;
        timedOut_.append(i);
        for (const QString& c : deck_->cards[i].concepts()) scores_[c].second += 1;
    }
    queue_.clear();
    learning_.clear();
    show(-1);
}

QList<MissedQuestion> StudySession::missedQuestions() const {
    QList<MissedQuestion> out;
    for (const Done& d : history_)
        if (!d.correct) out.append({&deck_->cards[d.cardIndex], d.chosen, true});
    for (int i : timedOut_) out.append({&deck_->cards[i], {}, false});
    return out;
}

QList<ConceptScore> StudySession::conceptScores() const {
    QList<ConceptScore> out;
    for (const QString& c : conceptNames()) {
        const auto it = scores_.find(c);
        if (it != scores_.end() && it->second > 0) out.append({c, it->first, it->second});
    }
    return out;
}

}  // namespace pd::study
