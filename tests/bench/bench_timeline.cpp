// One repaint of the timeline with 100,000 events at 1600x900 into a QImage (goal: under
// 8 ms on a 2-core laptop). A benchmark, never a test: no timing is asserted.
//   QT_QPA_PLATFORM=offscreen build/tests/bench/bench_timeline
#include <QImage>
#include <QPainter>
#include <QtTest>

#include "synthetic_trace.h"
#include "visualizer/timeline_view.h"

using pd::vis::TimelineView;

class BenchTimeline : public QObject {
    Q_OBJECT

  private slots:
    void repaint_data() {
        QTest::addColumn<int>("events");
        QTest::addColumn<double>("visibleFraction");
        QTest::newRow("100k events, whole run") << 100000 << 1.0;
        QTest::newRow("100k events, a tenth of the run") << 100000 << 0.1;
        QTest::newRow("100k events, zoomed to 1%") << 100000 << 0.01;
    }
    void repaint() {
        QFETCH(int, events);
        QFETCH(double, visibleFraction);
        TimelineView view;
        view.setRun(pd::vis::test::synthetic_result(events, 8));
        QCOMPARE(view.data().event_count(), static_cast<std::size_t>(events));
        const double t0 = static_cast<double>(view.data().begin_ns());
        const double t1 = t0 + static_cast<double>(view.data().end_ns() - view.data().begin_ns()) *
                                   visibleFraction;
        TimelineView::View v = view.currentView(QSizeF(1600, 900));
        v.mapping = TimelineView::fittedMapping(t0, t1, 1600);
        v.origin_ns = 0;
        v.palette = pd::vis::TimelinePalette::light_theme();
        QImage image(1600, 900, QImage::Format_ARGB32_Premultiplied);
        TimelineView::PaintStats stats;
        QBENCHMARK {
            QPainter painter(&image);
            stats = view.paint(painter, v);
        }
        qInfo("painted %d boxes, %d labels", stats.boxes, stats.labels);
    }
};

QTEST_MAIN(BenchTimeline)
#include "bench_timeline.moc"
