// The time <-> pixel mapping: zoom anchored at the pointer, pan, fit, and ruler ticks.
#include <QtTest>

#include "visualizer/time_mapping.h"

using pd::vis::TimeMapping;

class TestTimeMapping : public QObject {
    Q_OBJECT

  private slots:
    void roundTrip_data() {
        QTest::addColumn<double>("start");
        QTest::addColumn<double>("nsPerPx");
        QTest::addColumn<double>("left");
        QTest::addColumn<double>("t");
        QTest::newRow("origin at the left margin") << 0.0 << 1000.0 << 120.0 << 0.0;
        QTest::newRow("microseconds per pixel") << 5e5 << 1000.0 << 120.0 << 7.5e5;
        QTest::newRow("sub-nanosecond pixels") << 100.0 << 0.25 << 0.0 << 101.5;
        QTest::newRow("seconds per pixel") << 0.0 << 1e9 << 50.0 << 3.6e12;
        QTest::newRow("time left of the view") << 1e6 << 100.0 << 120.0 << 0.0;
    }
    void roundTrip() {
        QFETCH(double, start);
        QFETCH(double, nsPerPx);
        QFETCH(double, left);
        QFETCH(double, t);
        TimeMapping m{start, nsPerPx, left};
        QCOMPARE(m.x_of(start), left);
        QVERIFY(qAbs(m.t_of(m.x_of(t)) - t) <= 1e-6 * qMax(1.0, qAbs(t)));
    }

    void zoomKeepsAnchor_data() {
        QTest::addColumn<double>("factor");
        QTest::addColumn<double>("anchorX");
        QTest::addColumn<double>("expectedNsPerPx");
        QTest::newRow("one wheel notch in at the middle") << 1.25 << 620.0 << 800.0;
        QTest::newRow("one wheel notch out at the middle") << 0.8 << 620.0 << 1250.0;
        QTest::newRow("zoom in at the left edge of the plot") << 2.0 << 120.0 << 500.0;
        QTest::newRow("zoom in at the right edge") << 4.0 << 1580.0 << 250.0;
        QTest::newRow("zoom in on the device labels (left of plot)") << 2.0 << 10.0 << 500.0;
    }
    void zoomKeepsAnchor() {
        QFETCH(double, factor);
        QFETCH(double, anchorX);
        QFETCH(double, expectedNsPerPx);
        TimeMapping m{2e6, 1000.0, 120.0};
        const double before = m.t_of(anchorX);
        m.zoom(factor, anchorX);
        QCOMPARE(m.ns_per_px, expectedNsPerPx);
        QVERIFY(qAbs(m.t_of(anchorX) - before) < 1e-6);
    }

    void zoomIsClamped_data() {
        QTest::addColumn<double>("factor");
        QTest::addColumn<double>("expectedNsPerPx");
        QTest::newRow("far in stops at the finest zoom") << 1e12 << TimeMapping::kMinNsPerPx;
        QTest::newRow("far out stops at the coarsest zoom") << 1e-15 << TimeMapping::kMaxNsPerPx;
        QTest::newRow("a zero factor is ignored") << 0.0 << 1000.0;
        QTest::newRow("a negative factor is ignored") << -2.0 << 1000.0;
    }
    void zoomIsClamped() {
        QFETCH(double, factor);
        QFETCH(double, expectedNsPerPx);
        TimeMapping m{0, 1000.0, 100.0};
        m.zoom(factor, 400);
        QCOMPARE(m.ns_per_px, expectedNsPerPx);
    }

    void pan_data() {
        QTest::addColumn<double>("dx");
        QTest::addColumn<double>("expectedStart");
        QTest::newRow("drag right shows earlier times") << 100.0 << 900000.0;
        QTest::newRow("drag left shows later times") << -50.0 << 1050000.0;
        QTest::newRow("no movement") << 0.0 << 1000000.0;
    }
    void pan() {
        QFETCH(double, dx);
        QFETCH(double, expectedStart);
        TimeMapping m{1e6, 1000.0, 120.0};
        m.pan_px(dx);
        QCOMPARE(m.start_ns, expectedStart);
        QCOMPARE(m.ns_per_px, 1000.0);
    }

    void fit_data() {
        QTest::addColumn<double>("t0");
        QTest::addColumn<double>("t1");
        QTest::addColumn<double>("width");
        QTest::addColumn<double>("expectedStart");
        QTest::addColumn<double>("expectedEnd");
        QTest::newRow("one step of 2.4 ms into 1400 px")
            << 1.2e6 << 3.6e6 << 1400.0 << 1.2e6 << 3.6e6;
        QTest::newRow("reversed range") << 5e6 << 1e6 << 800.0 << 1e6 << 5e6;
        QTest::newRow("an empty range widens to 1 us")
            << 1e6 << 1e6 << 800.0 << 1e6 - 500 << 1e6 + 500;
        QTest::newRow("a whole second") << 0.0 << 1e9 << 1000.0 << 0.0 << 1e9;
    }
    void fit() {
        QFETCH(double, t0);
        QFETCH(double, t1);
        QFETCH(double, width);
        QFETCH(double, expectedStart);
        QFETCH(double, expectedEnd);
        TimeMapping m{0, 1, 124.0};
        m.fit(t0, t1, width);
        QCOMPARE(m.start_ns, expectedStart);
        QVERIFY(qAbs(m.end_ns(width) - expectedEnd) < 1e-3);
        QCOMPARE(m.x_of(expectedStart), 124.0);
    }

    void rulerTicks_data() {
        QTest::addColumn<double>("nsPerPx");
        QTest::addColumn<double>("minPx");
        QTest::addColumn<double>("expectedTick");
        QTest::newRow("nanoseconds") << 0.1 << 80.0 << 10.0;
        QTest::newRow("microseconds: 2 x 10^k") << 15.0 << 90.0 << 2000.0;
        QTest::newRow("milliseconds: 5 x 10^k") << 4000.0 << 90.0 << 500000.0;
        QTest::newRow("exact power of ten") << 1000.0 << 100.0 << 100000.0;
        QTest::newRow("seconds") << 2e7 << 90.0 << 2e9;
    }
    void rulerTicks() {
        QFETCH(double, nsPerPx);
        QFETCH(double, minPx);
        QFETCH(double, expectedTick);
        QCOMPARE(pd::vis::ruler_tick_ns(nsPerPx, minPx), expectedTick);
    }
};

QTEST_APPLESS_MAIN(TestTimeMapping)
#include "test_time_mapping.moc"
