// Scenario files and config validation: good input parses, bad input names what and why.
#include <QtTest>
#include <set>

#include "pd/error.h"
#include "pd/expectations.h"
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
        QCOMPARE(c.link.gbit_per_s(), 10.0);  // a bare number is Gb/s
        QCOMPARE(c.link.bytes_per_ns, 1.25);
        validate(c, src);
        QVERIFY(src.at("devices").find("card.json") != std::string::npos);
    }

    void round_trips() {
        RunConfig c;
        c.strategy = StrategyKind::dp;
        c.devices = 3;
        c.batch = 12;
        c.overlap = false;
        RunConfig back;
        ConfigSources src;
        apply_scenario_json(scenario_json(c), "round trip", back, src);
        validate(back, src);  // only the keys the strategy reads are written
        QCOMPARE(back.strategy, c.strategy);
        QCOMPARE(back.devices, 3);
        QCOMPARE(back.batch, 12);
        QCOMPARE(back.overlap, false);
        QCOMPARE(back.capacity_bytes, c.capacity_bytes);
        // A pipeline config round-trips its schedule and writes no dp-only key.
        RunConfig pipe;
        pipe.strategy = StrategyKind::pipeline;
        pipe.devices = 2;
        pipe.schedule = PipelineSchedule::interleaved;
        pipe.chunks = 2;
        pipe.microbatches = 4;
        const std::string text = scenario_json(pipe);
        QVERIFY(text.find("bucket_bytes") == std::string::npos);
        RunConfig pipe_back;
        ConfigSources pipe_src;
        apply_scenario_json(text, "round trip", pipe_back, pipe_src);
        validate(pipe_back, pipe_src);
        QCOMPARE(pipe_back.schedule, PipelineSchedule::interleaved);
        QCOMPARE(pipe_back.chunks, 2);
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
        QTest::addRow("link speed unit unknown") << R"({"link_gbps": "100 parsecs"})"
                                                 << "'link_gbps'";
        QTest::addRow("link speed lower-case prefix") << R"({"link_gbps": "100gb/s"})"
                                                      << "\"12.5GB/s\"";
        QTest::addRow("link speed without number") << R"({"link_gbps": "Gb/s"})"
                                                   << "'link_gbps'";
        QTest::addRow("link speed negative") << R"({"link_gbps": "-5Gb/s"})"
                                             << "'link_gbps'";
        QTest::addRow("link speed of bytes") << R"({"link_gbps": "64MiB"})"
                                             << "'link_gbps'";
        // Found by fuzz_scenario: a number past double escaped as nlohmann's out_of_range.
        QTest::addRow("number past double") << R"({"width": 1e3088})"
                                            << "broken.json: is not valid JSON";
        QTest::addRow("width past an int")
            << R"({"width": 100000000000})"
            << "scenario key 'width' in broken.json: is out of range";
        QTest::addRow("link speed as bool") << R"({"link_gbps": true})"
                                            << "a number of Gb/s";
        // The deck loader's rule (pd::parse_strict_json): a key given twice is refused, not read
        // as its last value.
        QTest::addRow("duplicate key") << R"({"devices": 2, "strategy": "dp", "devices": 4})"
                                       << "duplicate key 'devices' in the top-level object";
        QTest::addRow("duplicate key in a nested object")
            << R"({"expect": [{"metric": "step_time", "metric": "throughput"}]})"
            << "duplicate key 'metric' in expect[0]";
        QTest::addRow("duplicate key spelled two ways") << R"({"seq-len": 64, "seq_len": 128})"
                                                        << "duplicate key 'seq_len'";
        // Issue 41: a NUL escaped in a string was accepted (U+0000 in the value).
        QTest::addRow("NUL in a string") << R"({"strategy": "dp\u0000", "devices": 2})"
                                         << "a NUL character (\\u0000) in the string at strategy";
        QTest::addRow("NUL in a nested string")
            << R"({"expect": [{"metric": "loss\u0000"}]})"
            << "a NUL character (\\u0000) in the string at expect[0].metric";
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
                                        << "scenario key 'link_gbps' in s.json: must be more "
                                           "than 0 Gb/s";
        QTest::addRow("zero bandwidth with a unit") << R"({"link_gbps": "0 GB/s"})"
                                                    << "more than 0 Gb/s";
        QTest::addRow("bucket size off dp")
            << R"({"strategy": "pipeline", "devices": 2, "bucket_bytes": 1024})"
            << "'bucket_bytes' in s.json: applies to strategy 'dp' only";
        QTest::addRow("micro-batches off the pipeline")
            << R"({"strategy": "dp", "devices": 2, "microbatches": 4})"
            << "'microbatches' in s.json: applies to strategy 'pipeline'";
        QTest::addRow("schedule on a hybrid without stages")
            << R"({"strategy": "hybrid", "devices": 4, "dp": 2, "pp": 1, "tp": 2,
                   "schedule": "gpipe"})"
            << "'schedule'";
        QTest::addRow("mesh sizes off hybrid") << R"({"strategy": "tp", "devices": 2, "tp": 2})"
                                               << "applies to strategy 'hybrid' only";
        QTest::addRow("chunks without interleaving")
            << R"({"strategy": "pipeline", "devices": 2, "layers": 4, "chunks": 2})"
            << "'chunks' in s.json: applies to the interleaved schedule only";
        // One rule per key: a width below and above its range gets the same message.
        QTest::addRow("negative width") << R"({"width": -5})"
                                        << "'width' in s.json: must be between 1 and 8192 (got -5)";
        QTest::addRow("huge width") << R"({"width": 100000})"
                                    << "'width' in s.json: must be between 1 and 8192 (got 100000)";
        QTest::addRow("negative threads")
            << R"({"threads": -2})"
            << "'threads' in s.json: must be between 1 and 256 (or 0 for hardware threads";
        QTest::addRow("interleaved with one chunk")
            << R"({"strategy": "pipeline", "devices": 2, "layers": 4, "microbatches": 4,
                   "schedule": "interleaved", "chunks": 1})"
            << "at least 2 model chunks";
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

    // `expect` is parsed with the scenario, into the caller's Expectations when given.
    void parses_expectations() {
        RunConfig c;
        ConfigSources src;
        Expectations x;
        apply_scenario_json(R"({"strategy": "dp", "devices": 4, "expect": [
            {"status": "ok"},
            {"loss": "falls", "by_percent": 5},
            {"metric": "all_reduce_per_step", "equals": 1},
            {"metric": "peak.parameters", "devices": "all", "relative_to": {"device": 0},
             "between": [0.9, 1.1]},
            {"metric": "exposed_comm", "compare_with": {"no_overlap": true},
             "relative_to": {"run": "other"}, "at_most": 0.8},
            {"metric": "step_time", "compare_with": {"no_overlap": true},
             "relative_to": {"run": "other"}, "at_most": 1},
            {"metric": "bubble", "near": {"metric": "bubble.theoretical"}, "tolerance": 0.03}]})",
                            "card.json", c, src, &x);
        QCOMPARE(c.devices, 4);
        QCOMPARE(x.claims.size(), std::size_t{7});
        QCOMPARE(x.claims[0].kind, Claim::Kind::status);
        QCOMPARE(x.claims[1].kind, Claim::Kind::loss_falls);
        QCOMPARE(x.claims[1].percent, 5.0);
        QVERIFY(x.claims[3].all_devices);
        QCOMPARE(x.claims[3].relative_to->device, 0);
        // Two claims on the same variant share one run.
        QCOMPARE(x.variants.size(), std::size_t{1});
        QCOMPARE(x.claims[4].relative_to->variant, 0);
        QCOMPARE(x.claims[5].relative_to->variant, 0);
        QCOMPARE(x.claims[6].near_ref->metric, std::string("bubble.theoretical"));
        const RunConfig other = variant_config(c, x, 0, "card.json");
        QCOMPARE(other.overlap, false);
        // A refused claim: the comparison is not run; its refusal is the evidence, and the
        // claim holds only for the setting it names.
        {
            RunConfig base;
            ConfigSources base_src;
            Expectations r;
            apply_scenario_json(
                R"({"strategy": "dp", "devices": 2, "batch": 32, "expect": [
                    {"status": "refused", "key": "batch", "compare_with": {"devices": 3}},
                    {"status": "refused", "key": "devices", "compare_with": {"devices": 3}}]})",
                "card.json", base, base_src, &r);
            QCOMPARE(r.claims[0].kind, Claim::Kind::refused);
            QVERIFY(expects_refusal(r, 0));
            const RunEvidence refused = variant_evidence(base, r, 0, "card.json");
            QVERIFY(refused.refused);
            QCOMPARE(refused.refused->key, std::string("batch"));
            QVERIFY(refused.result.trace.steps.empty());  // never ran
            const RunEvidence main{base, {}, {}, {}, {}};
            const auto out = check_expectations(r, main, {refused});
            QVERIFY(out[0].passed);
            QVERIFY(!out[1].passed);
            QVERIFY(out[0].measured.find("does not divide") != std::string::npos);
            for (const char* bad : {R"([{"status": "refused", "compare_with": {"devices": 3}}])",
                                    R"([{"status": "refused", "key": "batch"}])",
                                    R"([{"status": "refused", "key": "batch", "device": 0,
                       "compare_with": {"devices": 3}}])"}) {
                try {
                    parse_expectations(bad, "card.json");
                    QFAIL(bad);
                } catch (const BadInput&) {
                }
            }
        }
        QCOMPARE(other.devices, 4);
        // Without an Expectations to fill, the key is still checked, then dropped.
        RunConfig plain;
        apply_scenario_json(R"({"expect": [{"status": "ok"}]})", "card.json", plain, src);
    }

    void rejects_bad_expectations_data() {
        QTest::addColumn<QString>("expect");
        QTest::addColumn<QString>("expected");
        QTest::addRow("not a list") << R"({"status": "ok"})"
                                    << "'expect' in e.json: must be a non-empty list";
        QTest::addRow("empty") << "[]"
                               << "non-empty list";
        QTest::addRow("no kind") << R"([{"device": 0}])"
                                 << "'expect[0]' in e.json: needs one of";
        QTest::addRow("bad status") << R"([{"status": "fine"}])"
                                    << "'expect[0].status'";
        QTest::addRow("bad category") << R"([{"status": "out_of_memory", "category": "weights"}])"
                                      << "'expect[0].category' in e.json: unknown memory category";
        QTest::addRow("falls without amount") << R"([{"loss": "falls"}])"
                                              << "needs by_percent";
        QTest::addRow("unknown metric") << R"([{"metric": "speed", "at_least": 1}])"
                                        << "'expect[0].metric' in e.json: unknown metric 'speed'";
        QTest::addRow("no comparison") << R"([{"metric": "step_time"}])"
                                       << "needs one comparison";
        QTest::addRow("two comparisons")
            << R"([{"metric": "step_time", "equals": 1, "between": [0, 2]}])"
            << "needs one comparison";
        QTest::addRow("device on run-wide")
            << R"([{"metric": "step_time", "device": 0, "at_least": 0}])"
            << "run-wide";
        QTest::addRow("per-device without device")
            << R"([{"metric": "busy_fraction", "at_least": 0}])"
            << "is per device";
        QTest::addRow("unknown claim key")
            << R"([{"metric": "step_time", "at_least": 0, "devise": 1}])"
            << "'expect[0].devise'";
        QTest::addRow("near without tolerance") << R"([{"metric": "bubble", "near": 0.2}])"
                                                << "needs tolerance";
        QTest::addRow("backwards band") << R"([{"metric": "bubble", "between": [0.5, 0.1]}])"
                                        << "low is above high";
        QTest::addRow("other without compare_with")
            << R"([{"metric": "step_time", "relative_to": {"run": "other"}, "at_most": 1}])"
            << "'expect[0].relative_to.run' in e.json: \"other\" needs compare_with";
        QTest::addRow("compare_with unread")
            << R"([{"metric": "step_time", "compare_with": {"steps": 3}, "at_most": 1}])"
            << "'expect[0].compare_with'";
        QTest::addRow("compare_with bad key")
            << R"([{"metric": "step_time", "compare_with": {"stepz": 3},
                    "relative_to": {"run": "other"}, "at_most": 1}])"
            << "'expect[0].compare_with.stepz' in e.json: is not a known setting";
        QTest::addRow("nested expect")
            << R"([{"metric": "step_time", "compare_with": {"expect": []},
                    "relative_to": {"run": "other"}, "at_most": 1}])"
            << "cannot hold expectations";
    }

    void rejects_bad_expectations() {
        QFETCH(QString, expect);
        QFETCH(QString, expected);
        RunConfig c;
        ConfigSources src;
        try {
            apply_scenario_json("{\"expect\": " + expect.toStdString() + "}", "e.json", c, src);
            QFAIL("accepted bad expectations");
        } catch (const BadInput& e) {
            const QString what = QString::fromStdString(e.what());
            QVERIFY2(what.contains(expected), qPrintable(what));
        }
    }

    // Checking on crafted evidence: each claim passes on the figures that satisfy it and fails
    // on those that do not, with the measured value beside it.
    void checks_claims_against_metrics() {
        RunEvidence run;
        run.result.status = RunStatus::ok;
        run.result.trace.devices = 2;
        run.metrics.steps = {{0, 2.0, 0.1}, {1, 1.5, 0.1}};
        run.metrics.final_loss = 1.5;
        run.metrics.median_step_time_s = 0.1;
        run.metrics.bubble = BubbleMetrics{};
        run.metrics.bubble->stages = 4;
        run.metrics.bubble->microbatches = 8;
        run.metrics.bubble->measured = 0.30;
        run.metrics.bubble->theoretical = 3.0 / 11;
        run.metrics.devices.resize(2);
        run.metrics.devices[0].device = 0;
        run.metrics.devices[1].device = 1;
        run.metrics.devices[0].busy_fraction = 0.9;
        run.metrics.devices[1].busy_fraction = 0.4;
        RunEvidence other = run;
        other.metrics.median_step_time_s = 0.2;

        RunConfig c;
        ConfigSources src;
        Expectations x;
        apply_scenario_json(R"({"expect": [
            {"status": "ok"},
            {"status": "out_of_memory"},
            {"loss": "falls", "by_percent": 20},
            {"loss": "falls", "by_percent": 30},
            {"loss": "diverges"},
            {"metric": "bubble", "near": {"metric": "bubble.theoretical"}, "tolerance": 0.03},
            {"metric": "bubble", "near": {"metric": "bubble.theoretical"}, "tolerance": 0.01},
            {"metric": "busy_fraction", "device": 0, "at_least": 0.8},
            {"metric": "busy_fraction", "devices": "all", "at_least": 0.8},
            {"metric": "busy_fraction", "device": 1, "relative_to": {"device": 0},
             "between": [0.4, 0.5]},
            {"metric": "busy_fraction", "device": 5, "at_least": 0},
            {"metric": "step_time", "compare_with": {"no_overlap": true},
             "relative_to": {"run": "other"}, "at_most": 0.6},
            {"metric": "all_reduce_per_step", "equals": 0}]})",
                            "e.json", c, src, &x);
        const auto out = check_expectations(x, run, {other});
        QCOMPARE(out.size(), x.claims.size());
        const bool want[] = {true, false, true, false, false, true, false,
                             true, false, true, false, true,  true};
        for (std::size_t i = 0; i < out.size(); ++i)
            QVERIFY2(out[i].passed == want[i],
                     qPrintable(QStringLiteral("claim %1: %2: %3")
                                    .arg(i)
                                    .arg(QString::fromStdString(out[i].description),
                                         QString::fromStdString(out[i].measured))));
        QCOMPARE(out[2].measured, std::string("2 -> 1.500 (25%)"));
        QCOMPARE(out[5].description,
                 std::string("bubble within 0.273 +- 0.030 (bubble.theoretical)"));
        QCOMPARE(out[5].measured, std::string("0.300"));
        QCOMPARE(out[8].measured, std::string("0.900 0.400"));
        QCOMPARE(out[10].measured, std::string("n/a"));
        QCOMPARE(out[11].measured, std::string("0.500"));
    }

    // What a learner reads of a claim, and what a view needs to show its evidence: the
    // figure, its devices, the comparison run, and for a timed comparison whether the two
    // runs' step ranges stay apart.
    void describes_claims_for_the_learner() {
        RunEvidence run;
        run.result.status = RunStatus::ok;
        run.result.trace.devices = 2;
        run.metrics.steps = {{0, 2.0, 0.1}, {1, 1.5, 0.1}, {2, 1.2, 0.1}};
        run.metrics.median_step_time_s = 0.1;
        run.metrics.devices.resize(2);
        run.metrics.devices[0].device = 0;
        run.metrics.devices[1].device = 1;
        run.metrics.devices[0].peak_bytes[static_cast<std::size_t>(MemoryCategory::activations)] =
            3 * 1024 * 1024;
        for (const double t : {0.09, 0.1, 0.11}) {
            StepFigures f;
            f.time_s = t;
            run.metrics.figure_step_samples.push_back(f);
        }
        RunEvidence slower = run;  // steps 0.2-0.22 s: apart from 0.09-0.11
        slower.metrics.median_step_time_s = 0.21;
        for (auto& f : slower.metrics.figure_step_samples) f.time_s += 0.11;
        RunEvidence overlapping = run;  // steps 0.1-0.12 s: overlapping
        overlapping.metrics.median_step_time_s = 0.11;
        for (auto& f : overlapping.metrics.figure_step_samples) f.time_s += 0.01;

        RunConfig c;
        ConfigSources src;
        Expectations x;
        apply_scenario_json(R"({"expect": [
            {"status": "ok"},
            {"metric": "peak.activations", "device": 0, "at_least": 1048576},
            {"metric": "step_time", "compare_with": {"link_gbps": 25},
             "relative_to": {"run": "other"}, "at_most": 0.6},
            {"metric": "step_time", "compare_with": {"batch": 16},
             "relative_to": {"run": "other"}, "between": [0.85, 1.15]}]})",
                            "e.json", c, src, &x);
        const auto out = check_expectations(x, run, {slower, overlapping});
        QCOMPARE(out.size(), std::size_t{4});
        QCOMPARE(out[0].plain, std::string("The run completes every step"));
        QCOMPARE(out[0].kind, Claim::Kind::status);
        QCOMPARE(out[1].plain,
                 std::string("Peak activations memory on device 0 is at least 1.00 MiB"));
        QCOMPARE(out[1].measured_words, std::string("3.00 MiB"));
        QCOMPARE(out[1].metric, std::string("peak.activations"));
        QCOMPARE(out[1].devices, std::vector<int>{0});
        QCOMPARE(out[1].variant, -1);
        QVERIFY(out[1].spread.empty());  // counted bytes: no noise to show
        QVERIFY(!out[1].beyond_spread);
        QCOMPARE(out[2].plain,
                 std::string("Step time is at most 0.6x the comparison run's (link_gbps 25)"));
        QCOMPARE(out[2].variant, 0);
        QVERIFY(out[2].passed);
        QVERIFY(out[2].beyond_spread && *out[2].beyond_spread);
        QVERIFY2(out[2].spread.find("90.0 ms to 110 ms") != std::string::npos,
                 out[2].spread.c_str());
        QCOMPARE(out[3].variant, 1);
        QVERIFY(out[3].beyond_spread && !*out[3].beyond_spread);
        QVERIFY2(out[3].spread.find("within the noise") != std::string::npos,
                 out[3].spread.c_str());
    }

    // `repeats`: a scenario key checked like the others; the run repeats, and a timed figure
    // reads the median over every repeat's figure steps.
    void repeats_pool_timed_figures() {
        RunConfig c;
        ConfigSources src;
        apply_scenario_json(R"({"strategy": "single", "devices": 1, "layers": 1, "width": 16,
                                "batch": 8, "steps": 3, "repeats": 3})",
                            "r.json", c, src);
        validate(c, src);
        QCOMPARE(c.repeats, 3);
        RunConfig round_trip;
        ConfigSources rs;
        apply_scenario_json(scenario_json(c), "round trip", round_trip, rs);
        QCOMPARE(round_trip.repeats, 3);
        const RunEvidence e = run_for_evidence(c);
        QCOMPARE(e.repeats.size(), std::size_t{2});
        // Figure steps 2-3 of each of the three runs.
        const auto samples = step_samples("step_time", e, -1);
        QCOMPARE(samples.size(), std::size_t{6});
        const Spread all = spread_of(samples);
        QCOMPARE(*read_metric("step_time", e, -1), all.median);
        QVERIFY(step_samples("peak.activations", e, 0).empty());
        for (const int bad : {0, 11}) {
            RunConfig b;
            ConfigSources bs;
            apply_scenario_json("{\"repeats\": " + std::to_string(bad) + "}", "r.json", b, bs);
            try {
                validate(b, bs);
                QFAIL("accepted repeats out of range");
            } catch (const BadInput& error) {
                QVERIFY2(std::string(error.what()).find("repeats") != std::string::npos,
                         error.what());
            }
        }
    }

    // The metric names claims read: unique, each with its meaning, per-device ones marked.
    void lists_expectation_metrics() {
        std::set<std::string> names;
        bool bubble = false, busy_per_device = false;
        for (const MetricInfo& m : expectation_metrics()) {
            QVERIFY2(names.insert(std::string(m.name)).second, std::string(m.name).c_str());
            QVERIFY(!m.meaning.empty());
            bubble = bubble || (m.name == "bubble" && !m.per_device);
            busy_per_device = busy_per_device || (m.name == "busy_fraction" && m.per_device);
        }
        QVERIFY(bubble);
        QVERIFY(busy_per_device);
        QVERIFY(names.count("peak.optimizer_state"));
        QVERIFY(names.count("all_reduce_per_step"));
    }

    // Every accepted spelling of a link speed, in Gb/s. Case tells bits from bytes.
    void link_speeds_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("gbit");
        QTest::addColumn<bool>("valid");
        QTest::addRow("bare number is Gb/s") << "400" << 400.0 << true;
        QTest::addRow("Gb/s") << "100Gb/s" << 100.0 << true;
        QTest::addRow("Gb/s spaced") << "100 Gb/s" << 100.0 << true;
        QTest::addRow("Gbit/s") << "400 Gbit/s" << 400.0 << true;
        QTest::addRow("Gbps") << "25Gbps" << 25.0 << true;
        QTest::addRow("GB/s") << "12.5GB/s" << 100.0 << true;
        QTest::addRow("GB/s spaced") << "50 GB/s" << 400.0 << true;
        QTest::addRow("GByte/s") << "2 GByte/s" << 16.0 << true;
        QTest::addRow("GBps") << "1GBps" << 8.0 << true;
        QTest::addRow("Mb/s") << "800 Mb/s" << 0.8 << true;
        QTest::addRow("MB/s") << "125MB/s" << 1.0 << true;
        QTest::addRow("Tb/s") << "1.6Tb/s" << 1600.0 << true;
        QTest::addRow("TB/s") << "0.9 TB/s" << 7200.0 << true;
        QTest::addRow("exponent") << "1e2 Gb/s" << 100.0 << true;
        QTest::addRow("padded") << "  10 Gb/s  " << 10.0 << true;
        QTest::addRow("zero parses, validate rejects") << "0" << 0.0 << true;
        QTest::addRow("lower-case prefix") << "100gb/s" << 0.0 << false;
        QTest::addRow("no per second") << "100Gb" << 0.0 << false;
        QTest::addRow("byte size") << "64MiB" << 0.0 << false;
        QTest::addRow("unknown unit") << "3 parsecs" << 0.0 << false;
        QTest::addRow("unit only") << "GB/s" << 0.0 << false;
        QTest::addRow("negative") << "-5 Gb/s" << 0.0 << false;
        QTest::addRow("two numbers") << "10 20 Gb/s" << 0.0 << false;
        QTest::addRow("empty") << "" << 0.0 << false;
    }

    void link_speeds() {
        QFETCH(QString, text);
        QFETCH(double, gbit);
        QFETCH(bool, valid);
        const auto parsed = parse_link_speed_gbit(text.toStdString());
        QCOMPARE(parsed.has_value(), valid);
        if (valid) QCOMPARE(*parsed, gbit);
    }

    // Scenario strings carry their unit; whatever the spelling, the link is the same.
    void link_speed_strings_in_scenarios_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<double>("bytes_per_ns");
        QTest::addRow("number") << R"({"link_gbps": 100})" << 12.5;
        QTest::addRow("Gb/s") << R"({"link_gbps": "100Gb/s"})" << 12.5;
        QTest::addRow("GB/s") << R"({"link_gbps": "12.5GB/s"})" << 12.5;
        QTest::addRow("Gbit/s") << R"({"link_gbps": "400 Gbit/s"})" << 50.0;
        QTest::addRow("GB/s spaced") << R"({"link_gbps": "50 GB/s"})" << 50.0;
    }

    void link_speed_strings_in_scenarios() {
        QFETCH(QString, json);
        QFETCH(double, bytes_per_ns);
        RunConfig c;
        ConfigSources src;
        apply_scenario_json(json.toStdString(), "card.json", c, src);
        QCOMPARE(c.link.bytes_per_ns, bytes_per_ns);
        validate(c, src);
        // scenario_json writes the number of Gb/s, which reads back as the same link.
        RunConfig back;
        apply_scenario_json(scenario_json(c), "round trip", back, src);
        QCOMPARE(back.link.bytes_per_ns, bytes_per_ns);
    }

    // The unit, end to end: 1 MB over 8 Gb/s (1 GB/s) takes 1 ms, plus the latency.
    void link_transfer_time_proves_the_unit() {
        RunConfig c;
        ConfigSources src;
        apply_scenario_json(R"({"link_gbps": 8, "link_latency_us": 5})", "card.json", c, src);
        QCOMPARE(c.link.transfer_ns(1'000'000), 1e6 + 5e3);
        apply_scenario_json(R"({"link_gbps": "1GB/s", "link_latency_us": 0})", "card.json", c, src);
        QCOMPARE(c.link.transfer_ns(1'000'000), 1e6);
        // The engine default stays the physical link it always was: 25 GB/s = 200 Gb/s.
        const LinkModel standard;
        QCOMPARE(standard.gbit_per_s(), 200.0);
        QCOMPARE(standard.transfer_ns(25'000) - standard.latency_us * 1e3, 1000.0);
    }

    void link_speed_text_shows_both_units() {
        QCOMPARE(QString::fromStdString(format_link_speed(100)),
                 QStringLiteral("100 Gb/s (12.5 GB/s)"));
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
