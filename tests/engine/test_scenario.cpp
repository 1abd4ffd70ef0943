// Scenario files and config validation: good input parses, bad input names what and why.
#include <QtTest>

#include "pd/error.h"
#include "pd/scenario.h"
#include "pd/units.h"

using namespace pd;

class TestScenario : public QObject {
    Q_OBJECT
  private slots:
    void parses_every_key() {
        RunConfig c;
        ConfigSources src;
        apply_scenario_json(R"({"strategy": "dp", "devices": 4, "layers": 2, "width": 64,
            "batch": 16, "steps": 3, "seed": 9, "optimizer": "sgd", "lr": 0.1,
            "bucket-bytes": "64KiB", "no_overlap": true, "capacity": "8MiB", "clock": "device",
            "link_latency_us": 2.5, "link_gbps": 10})",
                            "card.json", c, src);
        QCOMPARE(c.strategy, StrategyKind::dp);
        QCOMPARE(c.devices, 4);
        QCOMPARE(c.layers, 2);
        QCOMPARE(c.width, 64);
        QCOMPARE(c.batch, 16);
        QCOMPARE(c.steps, 3);
        QCOMPARE(c.seed, std::uint64_t{9});
        QCOMPARE(c.optimizer, OptimizerKind::sgd);
        QCOMPARE(c.lr, 0.1);
        QCOMPARE(c.bucket_bytes, std::size_t{65536});
        QCOMPARE(c.overlap, false);
        QCOMPARE(c.capacity_bytes, std::size_t{8} << 20);
        QCOMPARE(c.clock, ClockMode::device);
        QCOMPARE(c.link.latency_us, 2.5);
        QCOMPARE(c.link.gbps, 10.0);
        validate(c, src);
        QVERIFY(src.at("devices").find("card.json") != std::string::npos);
    }

    void round_trips() {
        RunConfig c;
        c.strategy = StrategyKind::ps;
        c.devices = 3;
        c.batch = 10;
        c.overlap = false;
        RunConfig back;
        ConfigSources src;
        apply_scenario_json(scenario_json(c), "round trip", back, src);
        QCOMPARE(back.strategy, c.strategy);
        QCOMPARE(back.devices, 3);
        QCOMPARE(back.batch, 10);
        QCOMPARE(back.overlap, false);
        QCOMPARE(back.capacity_bytes, c.capacity_bytes);
    }

    void rejects_bad_scenarios_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        QTest::addRow("not json") << "{devices: 2"
                                  << "not valid JSON";
        QTest::addRow("not an object") << "[1, 2]"
                                       << "JSON object";
        QTest::addRow("unknown key") << R"({"devicez": 2})"
                                     << "'devicez'";
        QTest::addRow("wrong type") << R"({"devices": "two"})"
                                    << "'devices'";
        QTest::addRow("unknown strategy") << R"({"strategy": "magic"})"
                                          << "unknown strategy";
        QTest::addRow("bad size") << R"({"capacity": "lots"})"
                                  << "'capacity'";
        QTest::addRow("fractional devices") << R"({"devices": 1.5})"
                                            << "integer";
    }

    void rejects_bad_scenarios() {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        RunConfig c;
        ConfigSources src;
        try {
            apply_scenario_json(json.toStdString(), "broken.json", c, src);
            QFAIL("accepted a bad scenario");
        } catch (const BadInput& e) {
            const QString what = QString::fromStdString(e.what());
            QVERIFY2(what.contains(expected), qPrintable(what));
            QVERIFY2(what.contains(QStringLiteral("broken.json")), qPrintable(what));
        }
    }

    void validation_names_the_key_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        QTest::addRow("zero devices") << R"({"strategy": "dp", "devices": 0})"
                                      << "scenario key 'devices' in s.json: must be at least 1";
        QTest::addRow("batch not divisible") << R"({"strategy": "dp", "devices": 3, "batch": 32})"
                                             << "'batch'";
        QTest::addRow("single on two") << R"({"strategy": "single", "devices": 2})"
                                       << "exactly 1";
        QTest::addRow("ps needs a worker") << R"({"strategy": "ps", "devices": 1})"
                                           << "parameter server";
        QTest::addRow("zero capacity") << R"({"capacity": 0})"
                                       << "'capacity'";
        QTest::addRow("zero bandwidth") << R"({"link_gbps": 0})"
                                        << "'link_gbps'";
    }

    void validation_names_the_key() {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        RunConfig c;
        ConfigSources src;
        apply_scenario_json(json.toStdString(), "s.json", c, src);
        try {
            validate(c, src);
            QFAIL("accepted an invalid config");
        } catch (const BadInput& e) {
            const QString what = QString::fromStdString(e.what());
            QVERIFY2(what.contains(expected), qPrintable(what));
        }
    }

    void byte_sizes_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qulonglong>("bytes");
        QTest::addColumn<bool>("valid");
        QTest::addRow("plain") << "123" << 123ull << true;
        QTest::addRow("KiB") << "64KiB" << 65536ull << true;
        QTest::addRow("MiB") << "64MiB" << 67108864ull << true;
        QTest::addRow("GiB") << "1GiB" << 1073741824ull << true;
        QTest::addRow("decimal MB") << "2MB" << 2000000ull << true;
        QTest::addRow("fraction") << "1.5KiB" << 1536ull << true;
        QTest::addRow("unit only") << "MiB" << 0ull << false;
        QTest::addRow("unknown unit") << "3 parsecs" << 0ull << false;
        QTest::addRow("negative") << "-5" << 0ull << false;
    }

    void byte_sizes() {
        QFETCH(QString, text);
        QFETCH(qulonglong, bytes);
        QFETCH(bool, valid);
        const auto parsed = parse_byte_size(text.toStdString());
        QCOMPARE(parsed.has_value(), valid);
        if (valid) QCOMPARE(qulonglong(*parsed), bytes);
    }

    void auto_clock_follows_cores() {
        RunConfig c;
        c.strategy = StrategyKind::dp;
        c.devices = 4;  // 8 streams
        QCOMPARE(resolve_clock(c, 2), ClockMode::device);
        QCOMPARE(resolve_clock(c, 16), ClockMode::wall);
        c.clock = ClockMode::wall;
        QCOMPARE(resolve_clock(c, 2), ClockMode::wall);
    }
};

QTEST_APPLESS_MAIN(TestScenario)
#include "test_scenario.moc"
