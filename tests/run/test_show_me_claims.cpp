// The Show me window's claims: every bundled card laid out at 1280x720, as a learner's small
// screen shows it, brings each claim's evidence into view inside the window (the headless
// report `paralleldeck --show-me ID --claims-json FILE` writes the same figures); a card
// whose claims compare runs shows its comparison run as B without being asked; a timed
// figure carries its spread.
#include <QAbstractBarSeries>
#include <QApplication>
#include <QBarSet>
#include <QChart>
#include <QDir>
#include <QDockWidget>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QTabWidget>
#include <QTest>
#include <QTimer>

#include "bundled_deck.h"
#include "claims_panel.h"
#include "claims_report.h"
#include "pd/scenario.h"
#include "show_me_window.h"
#include "visualizer/memory_bars.h"
#include "visualizer/metrics_panel.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"

namespace {

pd::ui::ClaimsReportRequest requestFor(const QString& cardId, QSize size) {
    const pd::study::Card* card = bundledDeck().card(cardId);
    if (!card) qFatal("no bundled card %s", qPrintable(cardId));
    pd::ui::ClaimsReportRequest r;
    r.card_id = cardId;
    r.title = card->prompt.left(70);
    r.note = card->scenarioNote;
    r.window_size = size;
    pd::ConfigSources sources;
    pd::apply_scenario_json(card->scenarioJson.toStdString(), "card", r.config, sources,
                            &r.expectations);
    pd::validate(r.config, sources);
    return r;
}

}  // namespace

class TestShowMeClaims : public QObject {
    Q_OBJECT

  private slots:
    void everyClaimsEvidenceIsInsideTheWindow_data() {
        QTest::addColumn<QString>("cardId");
        for (const pd::study::Card& card : bundledDeck().cards)
            if (card.hasScenario()) QTest::addRow("%s", qPrintable(card.id)) << card.id;
    }

    void everyClaimsEvidenceIsInsideTheWindow() {
        QFETCH(QString, cardId);
        pd::ui::ShowMeWindow window;
        QJsonObject report;
        QString error;
        QVERIFY2(pd::ui::claimsReport(window, requestFor(cardId, {1280, 720}), &report, &error),
                 qPrintable(error));
        QCOMPARE(report[QStringLiteral("window")][QStringLiteral("width")].toInt(), 1280);
        QCOMPARE(report[QStringLiteral("window")][QStringLiteral("height")].toInt(), 720);
        const QJsonArray claims = report[QStringLiteral("claims")].toArray();
        QVERIFY2(!claims.isEmpty(), "a bundled scenario has claims");
        // Every claim's text whole in the list: its row as tall as the wrapped text.
        QListWidget* list = window.claimsPanel()->list();
        for (int i = 0; i < list->count(); ++i) {
            const QRect row = list->visualItemRect(list->item(i));
            const QRect text = QFontMetrics(list->item(i)->font())
                                   .boundingRect(QRect(0, 0, row.width() - 8, 100000),
                                                 Qt::TextWordWrap, list->item(i)->text());
            QVERIFY2(row.height() >= text.height(),
                     qPrintable(QStringLiteral("claim %1 cut: row %2 px, text %3 px")
                                    .arg(i + 1)
                                    .arg(row.height())
                                    .arg(text.height())));
        }
        const QRect inside(0, 0, 1280, 720);
        for (const QJsonValue& v : claims) {
            const QJsonObject c = v.toObject();
            const QJsonObject e = c[QStringLiteral("evidence")].toObject();
            const QRect r(e[QStringLiteral("x")].toInt(), e[QStringLiteral("y")].toInt(),
                          e[QStringLiteral("width")].toInt(), e[QStringLiteral("height")].toInt());
            const QByteArray what =
                (c[QStringLiteral("text")].toString() + QStringLiteral(": evidence at %1,%2 %3x%4")
                                                            .arg(r.x())
                                                            .arg(r.y())
                                                            .arg(r.width())
                                                            .arg(r.height()))
                    .toUtf8();
            QVERIFY2(!c[QStringLiteral("text")].toString().isEmpty(), what.constData());
            // Readable, not a sliver: at least a few lines of a chart or one device's lanes.
            QVERIFY2(r.width() >= 200 && r.height() >= 24, what.constData());
            QVERIFY2(inside.contains(r), what.constData());
        }
    }

    void aComparisonClaimShowsItsRunAsB() {
        pd::ui::ShowMeWindow window;
        QJsonObject report;
        QString error;
        QVERIFY2(pd::ui::claimsReport(
                     window, requestFor(QStringLiteral("wmp-activation-memory"), {1280, 720}),
                     &report, &error),
                 qPrintable(error));
        // Claims 3 and 4 compare with seq_len 8 and batch 4: choosing each shows its run.
        window.claimsPanel()->choose(3);
        QCOMPARE(window.comparedVariant(), 1);
        // The status line names the run B now shows.
        QVERIFY2(window.status().endsWith(QStringLiteral("B below is the comparison run with "
                                                         "batch 4.")),
                 qPrintable(window.status()));
        QVERIFY(window.visualizer()->hasComparison());
        QVERIFY(window.visualizer()->comparisonTimeline()->isVisible());
        window.claimsPanel()->choose(2);
        QCOMPARE(window.comparedVariant(), 0);
        QVERIFY2(window.status().contains(QStringLiteral("B below is the comparison run with "
                                                         "seq_len 8")),
                 qPrintable(window.status()));
        // Memory evidence: the memory tab, both runs' bars on one axis.
        QCOMPARE(window.visualizer()->lowerTabs()->currentIndex(), 0);
        // The claim's category stands out on its device; the other categories fade.
        const auto* series = qobject_cast<QAbstractBarSeries*>(
            window.visualizer()->memoryBars()->chart()->series().value(0));
        QVERIFY(series);
        for (QBarSet* set : series->barSets()) {
            if (set->label() == QStringLiteral("activations"))
                QCOMPARE(set->color().alphaF(), 1.0f);
            else if (set->label() == QStringLiteral("parameters"))
                QVERIFY(set->color().alphaF() < 0.5f);
        }
        const auto& o = window.claimsPanel()->outcomes()[2];
        QVERIFY(o.plain.find("comparison run's (seq_len 8)") != std::string::npos);
        QVERIFY(!o.measured_words.empty() && o.measured_words.back() == 'x');
    }

    void aTimedClaimShowsItsSpread() {
        // A pipeline card: its bubble claim reads a figure from clocks, so the panel gives the
        // range over the figure steps beside the median.
        pd::ui::ShowMeWindow window;
        QJsonObject report;
        QString error;
        QVERIFY2(
            pd::ui::claimsReport(window, requestFor(QStringLiteral("pp-gpipe-bubble"), {1280, 720}),
                                 &report, &error),
            qPrintable(error));
        bool timed_with_spread = false;
        for (const auto& o : window.claimsPanel()->outcomes())
            if (o.timed && o.metric == "bubble") timed_with_spread = !o.spread.empty();
        QVERIFY(timed_with_spread);
    }

    // A card with `repeats`: its run is repeated before the claims are checked, and the
    // figures on screen cover every repeat, as the claims do.
    void repeatsAreRunAndTheFiguresCoverThem() {
        pd::ui::ClaimsReportRequest r;
        r.card_id = QStringLiteral("repeats");
        pd::ConfigSources sources;
        pd::apply_scenario_json(R"({"strategy": "single", "devices": 1, "layers": 1, "width": 16,
            "batch": 8, "steps": 3, "repeats": 3, "expect": [{"status": "ok"},
            {"metric": "step_time", "at_least": 0}]})",
                                "repeats", r.config, sources, &r.expectations);
        pd::validate(r.config, sources);
        pd::ui::ShowMeWindow window;
        QJsonObject report;
        QString error;
        QVERIFY2(pd::ui::claimsReport(window, r, &report, &error), qPrintable(error));
        const auto& step_time = window.claimsPanel()->outcomes()[1];
        // Figure steps 2-3 of each of three runs.
        QVERIFY2(step_time.spread.find("6 steps") != std::string::npos, step_time.spread.c_str());
        bool says_runs = false;
        for (QLabel* l : window.visualizer()->metricsPanel()->findChildren<QLabel*>())
            says_runs = says_runs || l->text().contains(QStringLiteral("of each of 3 runs"));
        QVERIFY(says_runs);
    }

    void theKeysDialogFitsASmallWindow() {
        pd::ui::ShowMeWindow window;
        window.placeAt({1280, 720});
        window.show();
        QAction* keys = nullptr;
        for (QAction* a : window.findChildren<QAction*>())
            if (a->shortcut() == QKeySequence(QKeySequence::HelpContents)) keys = a;
        QVERIFY(keys);
        QSize box_size;
        QTimer::singleShot(0, &window, [&] {
            if (QWidget* box = QApplication::activeModalWidget()) {
                box_size = box->frameGeometry().size();
                box->close();
            }
        });
        keys->trigger();
        QVERIFY(box_size.isValid());
        QVERIFY2(box_size.width() <= 1280 && box_size.height() <= 720,
                 qPrintable(QStringLiteral("%1x%2").arg(box_size.width()).arg(box_size.height())));
    }

    void theWhatIfDrawerIsClosedOnASmallScreenAndOpenOnALargeOne() {
        pd::ui::ShowMeWindow small;
        small.placeAt({1280, 720});
        small.show();
        QVERIFY(!small.whatIfDock()->isVisible());
        pd::ui::ShowMeWindow large;
        large.placeAt({1600, 1000});
        large.show();
        QVERIFY(large.whatIfDock()->isVisible());
    }
};

QTEST_MAIN(TestShowMeClaims)
#include "test_show_me_claims.moc"
