// The what-if panel: shows a scenario, offers a valid change as a new config, and explains an
// invalid one without starting anything.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTimer>
#include <QtTest>

#include "pd/memory_plan.h"
#include "pd/run.h"
#include "visualizer/format.h"
#include "what_if_panel.h"

using pd::ui::WhatIfPanel;

namespace {
pd::RunConfig pipeline_scenario() {
    pd::RunConfig c;
    c.strategy = pd::StrategyKind::pipeline;
    c.devices = 4;
    c.layers = 4;
    c.batch = 32;
    c.microbatches = 8;
    c.schedule = pd::PipelineSchedule::gpipe;
    return c;
}
}  // namespace

class TestWhatIfPanel : public QObject {
    Q_OBJECT
  private slots:
    void shows_the_scenario() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        const pd::RunConfig c = panel.config();
        QCOMPARE(c.strategy, pd::StrategyKind::pipeline);
        QCOMPARE(c.devices, 4);
        QCOMPARE(c.microbatches, 8);
        QCOMPARE(c.schedule, pd::PipelineSchedule::gpipe);
        QVERIFY(panel.problem().isEmpty());
    }

    // CUDA is offered only where it can run; elsewhere the item is disabled and says why.
    void cuda_is_offered_only_with_a_gpu() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        QComboBox* backend = nullptr;
        for (auto* combo : panel.findChildren<QComboBox*>())
            if (combo->findData(QStringLiteral("cuda")) >= 0) backend = combo;
        QVERIFY(backend);
        QCOMPARE(backend->currentData().toString(), QStringLiteral("cpu"));
        QCOMPARE(panel.config().backend, pd::BackendKind::cpu);
        const auto* items = qobject_cast<QStandardItemModel*>(backend->model());
        QVERIFY(items);
        const QStandardItem* cuda = items->item(backend->findData(QStringLiteral("cuda")));
        const std::string why = pd::backend_unavailable_reason(pd::BackendKind::cuda);
        QCOMPARE(cuda->isEnabled(), why.empty());
        if (!why.empty()) {
            QVERIFY2(cuda->toolTip().contains(QString::fromStdString(why)),
                     qPrintable(cuda->toolTip()));
            // A scenario that asks for CUDA here is explained, not run.
            pd::RunConfig c = pipeline_scenario();
            c.backend = pd::BackendKind::cuda;
            panel.setConfig(c);
            QVERIFY2(panel.problem().startsWith(QStringLiteral("backend: 'cuda' cannot run here")),
                     qPrintable(panel.problem()));
        }
    }

    // A mixture of experts' knobs: the experts count, then top-k and the capacity factor only
    // once there are experts; expert parallelism without experts is named as the problem.
    void expert_knobs_follow_the_experts() {
        WhatIfPanel panel;
        pd::RunConfig c;
        c.strategy = pd::StrategyKind::ep;
        c.devices = 2;
        c.model = pd::ModelKind::transformer;
        c.heads = 2;
        c.width = 32;
        c.seq_len = 8;
        c.batch = 8;
        c.experts = 4;
        c.top_k = 2;
        c.capacity_factor = 1.5;
        panel.setConfig(c);
        QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
        const pd::RunConfig shown = panel.config();
        QCOMPARE(shown.experts, 4);
        QCOMPARE(shown.top_k, 2);
        QCOMPARE(shown.capacity_factor, 1.5);
        auto* experts = panel.findChild<QSpinBox*>(QStringLiteral("experts"));
        auto* top_k = panel.findChild<QSpinBox*>(QStringLiteral("topK"));
        auto* factor = panel.findChild<QDoubleSpinBox*>(QStringLiteral("expertCapacityFactor"));
        QVERIFY(experts && top_k && factor);
        QVERIFY(top_k->isEnabled() && factor->isEnabled());
        experts->setValue(0);
        QVERIFY(!top_k->isEnabled() && !factor->isEnabled());
        QVERIFY2(panel.problem().contains(QStringLiteral("experts")), qPrintable(panel.problem()));
        experts->setValue(3);  // 3 experts over 2 devices
        QVERIFY2(panel.problem().contains(QStringLiteral("spread evenly")),
                 qPrintable(panel.problem()));
    }

    // The link knob reads and writes Gb/s, as links are quoted; the config keeps bytes per
    // ns. A scenario's link comes back unchanged, and a typed value means gigabits.
    void link_speed_round_trips_in_gbit() {
        WhatIfPanel panel;
        pd::RunConfig c = pipeline_scenario();
        c.link.set_gbit_per_s(100);  // a card's "link_gbps": 100, or "12.5GB/s"
        panel.setConfig(c);
        auto* link = panel.findChild<QDoubleSpinBox*>(QStringLiteral("linkBandwidth"));
        QVERIFY(link);
        QCOMPARE(link->suffix(), QStringLiteral(" Gb/s"));
        QCOMPARE(link->value(), 100.0);
        QCOMPARE(panel.config().link.bytes_per_ns, 12.5);
        QSignalSpy changed(&panel, &WhatIfPanel::configChanged);
        link->setValue(8);  // 8 Gb/s: one byte per ns
        QTRY_COMPARE(changed.count(), 1);
        const auto offered = changed.first().first().value<pd::RunConfig>();
        QCOMPARE(offered.link.bytes_per_ns, 1.0);
        QCOMPARE(offered.link.transfer_ns(1'000'000) - offered.link.latency_us * 1e3, 1e6);
        // The engine's default link shows as 200 Gb/s (25 GB/s).
        panel.setConfig(pipeline_scenario());
        QCOMPARE(link->value(), 200.0);
    }

    // The timeline header's form of the same link: both units, bytes first.
    void link_speed_text_shows_both_units() {
        QCOMPARE(pd::vis::link_speed_text(100), QStringLiteral("12.5 GB/s = 100 Gb/s"));
        QCOMPARE(pd::vis::link_speed_text(200), QStringLiteral("25 GB/s = 200 Gb/s"));
        QCOMPARE(pd::vis::link_speed_text(1), QStringLiteral("0.125 GB/s = 1 Gb/s"));
    }

    void gpipe_to_1f1b_offers_a_new_run() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        QSignalSpy changed(&panel, &WhatIfPanel::configChanged);
        auto* schedule = panel.findChildren<QComboBox*>().at(1);
        schedule->setCurrentIndex(schedule->findData(QStringLiteral("1f1b")));
        QTRY_COMPARE(changed.count(), 1);
        QCOMPARE(changed.first().first().value<pd::RunConfig>().schedule,
                 pd::PipelineSchedule::one_f_one_b);
    }

    void invalid_change_is_explained_and_not_run() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        QSignalSpy changed(&panel, &WhatIfPanel::configChanged);
        auto* schedule = panel.findChildren<QComboBox*>().at(1);
        schedule->setCurrentIndex(schedule->findData(QStringLiteral("interleaved")));
        auto spins = panel.findChildren<QSpinBox*>();  // devices, micro-batches, chunks, ...
        spins.at(8)->setValue(48);                     // batch: 8 rows per micro-batch below
        spins.at(1)->setValue(6);  // micro-batches: not a multiple of the 4 stages
        QVERIFY(panel.problem().contains(QStringLiteral("multiple")));
        auto* label = panel.findChild<QLabel*>(QStringLiteral("whatIfProblem"));
        QVERIFY(label && !label->isHidden());
        // No run is pending: the debounce timer that would offer one is stopped.
        auto* pending = panel.findChild<QTimer*>();
        QVERIFY(pending && !pending->isActive());
        QCOMPARE(changed.count(), 0);
    }
    // Issue 20 item 13: a value above a knob's maximum is said, not cut to three digits.
    void typed_value_above_the_maximum_is_said() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        panel.show();
        QSpinBox* width = nullptr;
        for (QLabel* l : panel.findChildren<QLabel*>())
            if (l->text() == QStringLiteral("&Width")) width = qobject_cast<QSpinBox*>(l->buddy());
        QVERIFY(width);
        width->setFocus();
        width->selectAll();
        QTest::keyClicks(width, QStringLiteral("2048"));
        QVERIFY2(panel.findChild<QLabel*>(QStringLiteral("whatIfProblem"))
                     ->text()
                     .contains(QStringLiteral("at most %1").arg(width->maximum())),
                 qPrintable(panel.findChild<QLabel*>(QStringLiteral("whatIfProblem"))->text()));
        QCOMPARE(panel.markedKnob(), static_cast<QWidget*>(width));
    }

    // A size the parser cannot read is named as a size problem, not as "0 bytes".
    void unreadable_size_names_the_unit_problem() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        QLineEdit* capacity = nullptr;
        for (QLabel* l : panel.findChildren<QLabel*>())
            if (l->text() == QStringLiteral("&Capacity per device"))
                capacity = qobject_cast<QLineEdit*>(l->buddy());
        QVERIFY(capacity);
        capacity->setText(QStringLiteral("80 potatoes"));
        emit capacity->editingFinished();
        QVERIFY2(panel.problem().contains(QStringLiteral("'80 potatoes' is not a size")),
                 qPrintable(panel.problem()));
        QVERIFY(!panel.problem().contains(QStringLiteral("0 bytes")));
        QCOMPARE(panel.markedKnob(), static_cast<QWidget*>(capacity));
    }

    // Strategies read as names; the engine's key travels as the item's data.
    void strategies_have_names_and_new_knobs_apply() {
        WhatIfPanel panel;
        panel.setConfig(pipeline_scenario());
        auto* strategy = panel.findChildren<QComboBox*>().at(0);
        QCOMPARE(strategy->currentText(), QStringLiteral("Pipeline parallel"));
        QCOMPARE(strategy->currentData().toString(), QStringLiteral("pipeline"));
        QVERIFY(strategy->findText(QStringLiteral("dp")) < 0);
        QSignalSpy changed(&panel, &WhatIfPanel::configChanged);
        QComboBox* optimizer = nullptr;
        for (auto* combo : panel.findChildren<QComboBox*>())
            if (combo->findData(QStringLiteral("sgd")) >= 0) optimizer = combo;
        QVERIFY(optimizer);
        optimizer->setCurrentIndex(optimizer->findData(QStringLiteral("sgd")));
        QTRY_COMPARE(changed.count(), 1);
        QCOMPARE(changed.last().first().value<pd::RunConfig>().optimizer, pd::OptimizerKind::sgd);
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("zero3")));
        QTRY_COMPARE(changed.count(), 2);
        QCOMPARE(changed.last().first().value<pd::RunConfig>().strategy, pd::StrategyKind::zero3);
    }

    // A card's LAMB or 8-bit optimizer shows as itself and comes back unchanged (it used to
    // read back as AdamW, so a what-if run silently changed the optimizer).
    void every_optimizer_round_trips() {
        for (pd::OptimizerKind kind : {pd::OptimizerKind::sgd, pd::OptimizerKind::adamw,
                                       pd::OptimizerKind::lamb, pd::OptimizerKind::adamw8bit}) {
            WhatIfPanel panel;
            pd::RunConfig c = pipeline_scenario();
            c.strategy = pd::StrategyKind::dp;
            c.optimizer = kind;
            panel.setConfig(c);
            QCOMPARE(panel.config().optimizer, kind);
            QVERIFY(!panel.differsFromCard());
        }
    }

    // Recompute, accumulation and the asynchronous server: each knob is live only where its
    // strategy reads it, and a knob left behind by another strategy does not leak into a run.
    void memory_savers_and_async_knobs_apply() {
        WhatIfPanel panel;
        pd::RunConfig ps;
        ps.strategy = pd::StrategyKind::ps;
        ps.devices = 3;
        ps.batch = 48;
        panel.setConfig(ps);
        QCheckBox* async = nullptr;
        QCheckBox* every = nullptr;
        for (auto* box : panel.findChildren<QCheckBox*>()) {
            if (box->text().contains(QStringLiteral("parameter server"))) async = box;
            if (box->text().contains(QStringLiteral("micro-step"))) every = box;
        }
        QVERIFY(async && every);
        QSpinBox* accumulate = nullptr;
        QSpinBox* staleness = nullptr;
        for (auto* spin : panel.findChildren<QSpinBox*>()) {
            if (spin->toolTip().contains(QStringLiteral("accumulation"))) accumulate = spin;
            if (spin->toolTip().contains(QStringLiteral("version k"))) staleness = spin;
        }
        QVERIFY(accumulate && staleness);
        QVERIFY(async->isEnabled());
        QVERIFY(!accumulate->isEnabled());
        QVERIFY(!staleness->isEnabled());
        QSignalSpy changed(&panel, &WhatIfPanel::configChanged);
        async->setChecked(true);
        QVERIFY(staleness->isEnabled());
        staleness->setValue(2);
        QTRY_VERIFY(changed.count() >= 1);
        pd::RunConfig c = changed.last().first().value<pd::RunConfig>();
        QVERIFY(c.async_updates);
        QCOMPARE(c.max_staleness, 2);

        auto* strategy = panel.findChildren<QComboBox*>().at(0);
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("dp")));
        QVERIFY(accumulate->isEnabled());
        QVERIFY(!async->isEnabled());
        QVERIFY(!every->isEnabled());  // one micro-step: nothing to reduce more often
        accumulate->setValue(4);
        QVERIFY(every->isEnabled());
        every->setChecked(true);
        const int before = changed.count();
        QTRY_VERIFY(changed.count() > before);
        c = changed.last().first().value<pd::RunConfig>();
        QCOMPARE(c.accumulate, 4);
        QVERIFY(c.reduce_every_microstep);
        QVERIFY(!c.async_updates);
        QCOMPARE(c.max_staleness, 0);
        // 16 samples per replica do not split into 3: the problem names the knob at fault.
        accumulate->setValue(3);
        QVERIFY(panel.problem().contains(QStringLiteral("micro-steps")));
        QCOMPARE(panel.markedKnob(), accumulate);

        QComboBox* precision = nullptr;
        for (auto* combo : panel.findChildren<QComboBox*>())
            if (combo->findData(QStringLiteral("bf16-mixed")) >= 0) precision = combo;
        QVERIFY(precision);
        precision->setCurrentIndex(precision->findData(QStringLiteral("bf16-mixed")));
        QCOMPARE(panel.config().precision, pd::Precision::bf16_mixed);

        strategy->setCurrentIndex(strategy->findData(QStringLiteral("pipeline")));
        QVERIFY(!accumulate->isEnabled());
        QCOMPARE(panel.config().accumulate, 1);
        QVERIFY(!panel.config().reduce_every_microstep);
    }

    // The transformer knobs: heads and sequence length only with the transformer, sequence
    // parallelism only with tensor parallelism too; a head count that does not divide over
    // the devices is named on the heads knob.
    void transformer_knobs_apply() {
        WhatIfPanel panel;
        pd::RunConfig tp;
        tp.strategy = pd::StrategyKind::tp;
        tp.devices = 2;
        tp.width = 64;
        panel.setConfig(tp);
        QCheckBox* transformer = nullptr;
        QCheckBox* sp = nullptr;
        for (auto* box : panel.findChildren<QCheckBox*>()) {
            if (box->text().contains(QStringLiteral("former"))) transformer = box;
            if (box->text().contains(QStringLiteral("sequence parallel"))) sp = box;
        }
        QSpinBox* heads = nullptr;
        for (auto* spin : panel.findChildren<QSpinBox*>())
            if (spin->toolTip().contains(QStringLiteral("Attention heads"))) heads = spin;
        QVERIFY(transformer && sp && heads);
        QVERIFY(!heads->isEnabled());
        QVERIFY(!sp->isEnabled());
        transformer->setChecked(true);
        QVERIFY(heads->isEnabled());
        QVERIFY(sp->isEnabled());
        sp->setChecked(true);
        pd::RunConfig c = panel.config();
        QCOMPARE(c.model, pd::ModelKind::transformer);
        QVERIFY(c.sequence_parallel);
        QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
        heads->setValue(3);  // 64 does not split into 3 heads
        QVERIFY(panel.problem().contains(QStringLiteral("heads")));
        QCOMPARE(panel.markedKnob(), heads);
        heads->setValue(4);
        auto* strategy = panel.findChildren<QComboBox*>().at(0);
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("dp")));
        QVERIFY(!sp->isEnabled());
        QVERIFY(!panel.config().sequence_parallel);
        QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
    }
    // A card's Ulysses run reads back as Ulysses (a what-if run must not silently turn it into
    // ring attention), the box is only for cp, and heads that do not divide are named.
    void ulysses_round_trips_and_its_head_limit_is_said() {
        WhatIfPanel panel;
        pd::RunConfig cp;
        cp.strategy = pd::StrategyKind::cp;
        cp.devices = 4;
        cp.model = pd::ModelKind::transformer;
        cp.width = 64;
        cp.heads = 4;
        cp.seq_len = 16;
        cp.cp_ulysses = true;
        panel.setConfig(cp);
        QCheckBox* ulysses = nullptr;
        for (auto* box : panel.findChildren<QCheckBox*>())
            if (box->text().contains(QStringLiteral("Ulysses"))) ulysses = box;
        QVERIFY(ulysses && ulysses->isEnabled() && ulysses->isChecked());
        QVERIFY(panel.config().cp_ulysses);
        QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
        QSpinBox* heads = nullptr;
        for (auto* spin : panel.findChildren<QSpinBox*>())
            if (spin->toolTip().contains(QStringLiteral("Attention heads"))) heads = spin;
        QVERIFY(heads);
        heads->setValue(2);  // 2 heads over a ring of 4
        QVERIFY2(panel.problem().contains(QStringLiteral("heads must divide")),
                 qPrintable(panel.problem()));
        QCOMPARE(panel.markedKnob(), ulysses);
        ulysses->setChecked(false);
        QVERIFY(!panel.config().cp_ulysses);
        QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
        auto* strategy = panel.findChildren<QComboBox*>().at(0);
        strategy->setCurrentIndex(strategy->findData(QStringLiteral("dp")));
        QVERIFY(!ulysses->isEnabled());
    }
    // Issue 41 item 2: a what-if run the host cannot hold is refused before it starts, in
    // the run's own words, with the width knob marked.
    void a_run_beyond_the_hosts_memory_is_said_before_it_starts() {
        pd::RunConfig c;
        c.strategy = pd::StrategyKind::dp;
        c.devices = 16;
        c.layers = 32;
        c.width = 1024;
        c.batch = 32;
        c.capacity_bytes = std::size_t{64} << 30;
        const auto available = pd::host_memory_available();
        QVERIFY(available.has_value());
        if (static_cast<double>(available->bytes) > pd::host_memory_need(c).total())
            QSKIP("this host has the memory 16 replicas of 32 x 1024 need");
        WhatIfPanel panel;
        QSignalSpy changed(&panel, &WhatIfPanel::configChanged);
        panel.setConfig(c);
        QVERIFY2(panel.problem().contains(QStringLiteral("of host memory")),
                 qPrintable(panel.problem()));
        QCOMPARE(panel.problem(), QString::fromStdString(pd::host_memory_shortage(c)));
        QVERIFY(panel.markedKnob());
        QCOMPARE(changed.count(), 0);
    }
};

QTEST_MAIN(TestWhatIfPanel)
#include "test_what_if_panel.moc"
