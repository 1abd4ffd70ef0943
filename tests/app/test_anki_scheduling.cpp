// Anki's scheduling rules, the app's default: days roll over at the "next day starts at" hour
// of local wall-clock time (so across DST changes and in any time zone), elapsed days count
// those rollovers, and a review card's passing intervals keep good >= hard + 1 and easy >=
// good + 1, fuzz included. py-fsrs's rules stay one setting away (test_fsrs holds its vectors).
#include <QTimeZone>
#include <QtTest>

#include <chrono>

#include "study/fsrs.h"
#include "study/review_store.h"
#include "study/study_session.h"

using namespace std::chrono;
using pd::study::CardState;
using pd::study::FsrsCard;
using pd::study::FsrsParams;
using pd::study::FsrsScheduler;
using pd::study::FsrsTimePoint;
using pd::study::Rating;
using pd::study::StudySettings;

namespace {

QTimeZone zone(const char* id) {
    const QTimeZone z(id);
    if (!z.isValid()) qFatal("time zone %s is not available", id);
    return z;
}

FsrsTimePoint at(int y, int m, int d, int h, int min, const QTimeZone& z) {
    return pd::study::toTimePoint(QDateTime(QDate(y, m, d), QTime(h, min), z));
}

FsrsCard reviewedAt(FsrsTimePoint last, double stability, double difficulty) {
    FsrsCard card = pd::study::makeNewFsrsCard(last);
    card.state = CardState::Review;
    card.step.reset();
    card.stability = stability;
    card.difficulty = difficulty;
    card.lastReview = last;
    card.due = last;
    return card;
}

}  // namespace

class TestAnkiScheduling : public QObject {
    Q_OBJECT
  private slots:
    // A study day runs from 4:00 to 4:00 local time.
    void daysRollOverAtTheStartHour() {
        const QTimeZone berlin = zone("Europe/Berlin");
        const auto day = pd::study::ankiDayCounter(4, berlin);
        QCOMPARE(day(at(2026, 6, 10, 3, 59, berlin)) + 1, day(at(2026, 6, 10, 4, 1, berlin)));
        QCOMPARE(day(at(2026, 6, 10, 22, 0, berlin)), day(at(2026, 6, 11, 3, 0, berlin)));
        QCOMPARE(day(at(2026, 6, 10, 4, 0, berlin)), day(at(2026, 6, 11, 3, 59, berlin)));
    }

    // Clocks jump (Berlin: 29 March 2026 02:00 -> 03:00, 25 October 03:00 -> 02:00): the
    // boundary stays at 4:00 on the wall clock, so 22.5 real hours can be a day, and 24 h 40 min
    // inside one study day are not.
    void theBoundaryStaysOnTheWallClockAcrossDst() {
        const QTimeZone berlin = zone("Europe/Berlin");
        StudySettings anki;
        FsrsScheduler scheduler(anki.fsrsParams(), 1);
        scheduler.setDayCounter(anki.dayCounter(berlin));
        const FsrsTimePoint before = at(2026, 3, 28, 5, 0, berlin);
        const FsrsTimePoint after = at(2026, 3, 29, 4, 30, berlin);
        QCOMPARE(duration_cast<minutes>(after - before).count(), 22 * 60 + 30);
        const FsrsCard card = reviewedAt(before, 5.0, 5.0);
        QCOMPARE(scheduler.elapsedDays(card, after), 1LL);
        FsrsScheduler pyFsrs(FsrsParams{}, 1);
        QCOMPARE(pyFsrs.elapsedDays(card, after), 0LL);  // whole 24-hour periods
        // Autumn: the study day of 24 October (04:00 to 04:00) holds 25 real hours; 04:10 to
        // 03:50 the next morning is 24 h 40 min, one study day.
        const FsrsTimePoint autumn = at(2026, 10, 24, 4, 10, berlin);
        const FsrsTimePoint next = at(2026, 10, 25, 3, 50, berlin);
        QCOMPARE(duration_cast<minutes>(next - autumn).count(), 24 * 60 + 40);
        QCOMPARE(scheduler.elapsedDays(reviewedAt(autumn, 5.0, 5.0), next), 0LL);
        QCOMPARE(pyFsrs.elapsedDays(reviewedAt(autumn, 5.0, 5.0), next), 1LL);
    }

    // The same two instants are one study day in Tokyo and two in New York.
    void theLearnersTimeZoneDecides() {
        const FsrsTimePoint first = sys_days{2026y / June / 1} + 2h;    // 11:00 Tokyo, 22:00 NY
        const FsrsTimePoint second = sys_days{2026y / June / 1} + 10h;  // 19:00 Tokyo, 06:00 NY
        const auto tokyo = pd::study::ankiDayCounter(4, zone("Asia/Tokyo"));
        const auto newYork = pd::study::ankiDayCounter(4, zone("America/New_York"));
        QCOMPARE(tokyo(second) - tokyo(first), 0LL);
        QCOMPARE(newYork(second) - newYork(first), 1LL);
    }

    // The daily limits count from the start of the study day.
    void theStudyDayStartsAtTheHour() {
        const QTimeZone berlin = zone("Europe/Berlin");
        StudySettings s;
        s.nextDayStartsAt = 4;
        const QDateTime night(QDate(2026, 6, 11), QTime(2, 30), berlin);
        QCOMPARE(s.startOfStudyDay(night, berlin),
                 QDateTime(QDate(2026, 6, 10), QTime(4, 0), berlin));
        s.ankiScheduling = false;
        QCOMPARE(s.startOfStudyDay(night, berlin),
                 QDateTime(QDate(2026, 6, 11), QTime(0, 0), berlin));
    }

    // For short stabilities py-fsrs rounds hard and good to the same day; Anki's order keeps
    // them apart, with and without fuzz, and review() gives what preview() showed.
    void passingIntervalsKeepAnkisOrder() {
        const FsrsTimePoint last = sys_days{2026y / June / 1} + 12h;
        int equalInPyFsrs = 0;
        for (double stability : {0.3, 0.6, 1.0, 1.5, 2.5, 4.0, 9.0, 30.0}) {
            for (double difficulty : {2.0, 5.0, 9.5}) {
                const FsrsCard card = reviewedAt(last, stability, difficulty);
                const FsrsTimePoint now = last + days(1);
                FsrsParams py;
                py.enableFuzzing = false;
                const auto plain = FsrsScheduler(py, 3).preview(card, now);
                auto ivl = [&](const FsrsCard& c) { return floor<days>(c.due - now).count(); };
                if (ivl(plain[1]) == ivl(plain[2])) ++equalInPyFsrs;
                for (bool fuzz : {false, true}) {
                    FsrsParams p;
                    p.enableFuzzing = fuzz;
                    p.ankiIntervalOrder = true;
                    FsrsScheduler scheduler(p, 11);
                    const auto shown = scheduler.preview(card, now);
                    QVERIFY(ivl(shown[2]) >= ivl(shown[1]) + 1);
                    QVERIFY(ivl(shown[3]) >= ivl(shown[2]) + 1);
                    for (Rating r : {Rating::Hard, Rating::Good, Rating::Easy}) {
                        FsrsScheduler same(p, 11);
                        QCOMPARE(same.review(card, r, now).due,
                                 shown[pd::study::ratingIndex(r)].due);
                    }
                }
            }
        }
        QVERIFY2(equalInPyFsrs > 0,
                 "no case where py-fsrs gives good == hard: the test shows nothing");
    }

    // fsrs-rs 6.x (Anki 26.08+) and ts-fsrs: a same-day Hard keeps stability; py-fsrs 6.3.1
    // lowers it by e^(w17 (w18 - 1)) S^-w19. Anki's rules are the settings' default.
    void aSameDayHardKeepsStability() {
        const FsrsTimePoint first = sys_days{2026y / June / 1} + 12h;
        for (double stability : {0.5, 2.0, 20.0}) {
            FsrsCard card = reviewedAt(first, stability, 5.0);
            const FsrsTimePoint later = first + 2h;
            FsrsParams anki = StudySettings{}.fsrsParams();
            anki.enableFuzzing = false;
            QVERIFY(anki.ankiSameDayHard);
            QCOMPARE(*FsrsScheduler(anki, 1).review(card, Rating::Hard, later).stability,
                     stability);
            FsrsParams py;
            py.enableFuzzing = false;
            const double lowered =
                *FsrsScheduler(py, 1).review(card, Rating::Hard, later).stability;
            QVERIFY2(lowered < stability, qPrintable(QString::number(lowered)));
            // Again still lowers it under both rules.
            QVERIFY(*FsrsScheduler(anki, 1).review(card, Rating::Again, later).stability <
                    stability);
        }
    }

    // Settings keep both choices.
    void settingsRoundTrip() {
        QTemporaryDir dir;
        pd::study::ReviewStore store;
        QString error;
        QVERIFY2(store.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        StudySettings defaults = StudySettings::load(store);
        QVERIFY(defaults.ankiScheduling);
        QCOMPARE(defaults.nextDayStartsAt, 4);
        StudySettings changed = defaults;
        changed.ankiScheduling = false;
        changed.nextDayStartsAt = 6;
        QVERIFY(changed.save(store));
        QCOMPARE(StudySettings::load(store), changed);
        QVERIFY(!changed.fsrsParams().ankiIntervalOrder);
        QVERIFY(!changed.fsrsParams().ankiSameDayHard);
        QVERIFY(!changed.dayCounter());
    }
};

QTEST_GUILESS_MAIN(TestAnkiScheduling)
#include "test_anki_scheduling.moc"
