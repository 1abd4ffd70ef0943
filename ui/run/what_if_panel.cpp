#include "what_if_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTimer>

#include "pd/error.h"
#include "pd/run.h"
#include "pd/units.h"

namespace pd::ui {

namespace {

constexpr int kDebounceMs = 350;

QSpinBox* spin(QWidget* parent, int lo, int hi) {
    auto* s = new QSpinBox(parent);
    s->setRange(lo, hi);
    s->setKeyboardTracking(false);
    return s;
}

QString bytes_text(std::size_t bytes) {
    return QString::fromStdString(pd::format_bytes(static_cast<double>(bytes)))
        .remove(QLatin1Char(' '));
}

}  // namespace

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    strategy_ = new QComboBox(this);
    for (const char* name :
         {"single", "dp", "ps", "pipeline", "tp", "zero1", "zero2", "zero3", "hybrid"})
        strategy_->addItem(QString::fromLatin1(name));
    devices_ = spin(this, 1, 16);
    schedule_ = new QComboBox(this);
    schedule_->addItem(tr("GPipe"), QStringLiteral("gpipe"));
    schedule_->addItem(tr("1F1B"), QStringLiteral("1f1b"));
    schedule_->addItem(tr("Interleaved 1F1B"), QStringLiteral("interleaved"));
    microbatches_ = spin(this, 1, 64);
    chunks_ = spin(this, 1, 8);
    dp_ = spin(this, 1, 16);
    pp_ = spin(this, 1, 16);
    tp_ = spin(this, 1, 16);
    layers_ = spin(this, 1, 32);
    width_ = spin(this, 8, 1024);
    width_->setSingleStep(32);
    batch_ = spin(this, 1, 4096);
    capacity_ = new QLineEdit(this);
    capacity_->setPlaceholderText(QStringLiteral("64MiB"));
    clock_ = new QComboBox(this);
    clock_->addItem(tr("Auto"), QStringLiteral("auto"));
    clock_->addItem(tr("Device (per-device CPU time)"), QStringLiteral("device"));
    clock_->addItem(tr("Wall (real time)"), QStringLiteral("wall"));
    backend_ = new QComboBox(this);
    backend_->addItem(tr("CPU threads"), QStringLiteral("cpu"));
    backend_->addItem(tr("CUDA GPU"), QStringLiteral("cuda"));
    // Offered only where it can run; otherwise the item says why.
    const QString no_cuda =
        QString::fromStdString(pd::backend_unavailable_reason(pd::BackendKind::cuda));
    if (!no_cuda.isEmpty()) {
        if (auto* items = qobject_cast<QStandardItemModel*>(backend_->model())) {
            QStandardItem* cuda = items->item(1);
            cuda->setEnabled(false);
            cuda->setText(tr("CUDA GPU (not available)"));
            cuda->setToolTip(tr("CUDA is not available: %1").arg(no_cuda));
        }
        backend_->setToolTip(tr("CUDA is not available: %1").arg(no_cuda));
    } else {
        backend_->setToolTip(tr("CUDA: each device is a GPU, or several devices share one"));
    }
    // Gigabits per second, as links and NICs are quoted (the scenario key link_gbps too).
    link_gbps_ = new QDoubleSpinBox(this);
    link_gbps_->setRange(0.001, 100000);
    link_gbps_->setDecimals(3);
    link_gbps_->setSuffix(QStringLiteral(" Gb/s"));
    link_gbps_->setKeyboardTracking(false);
    overlap_ = new QCheckBox(tr("Overlap all-reduce with backward"), this);
    bucket_ = new QLineEdit(this);
    bucket_->setPlaceholderText(QStringLiteral("256KiB"));
    problem_ = new QLabel(this);
    problem_->setWordWrap(true);
    problem_->setObjectName(QStringLiteral("whatIfProblem"));
    problem_->setStyleSheet(QStringLiteral("color: palette(highlight); font-weight: 600;"));
    problem_->hide();

    form->addRow(tr("&Strategy"), strategy_);
    form->addRow(tr("&Devices"), devices_);
    form->addRow(tr("Sc&hedule"), schedule_);
    form->addRow(tr("&Micro-batches"), microbatches_);
    form->addRow(tr("Chun&ks per device"), chunks_);
    form->addRow(tr("Mesh dp"), dp_);
    form->addRow(tr("Mesh pp"), pp_);
    form->addRow(tr("Mesh tp"), tp_);
    form->addRow(tr("&Blocks"), layers_);
    form->addRow(tr("&Width"), width_);
    form->addRow(tr("B&atch"), batch_);
    form->addRow(tr("&Capacity per device"), capacity_);
    form->addRow(tr("C&lock"), clock_);
    form->addRow(tr("Bac&kend"), backend_);
    form->addRow(tr("&Link bandwidth"), link_gbps_);
    form->addRow(QString(), overlap_);
    form->addRow(tr("B&ucket size"), bucket_);
    form->addRow(problem_);

    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(kDebounceMs);
    connect(debounce_, &QTimer::timeout, this, &WhatIfPanel::emitIfValid);

    auto changed = [this] { knobChanged(); };
    connect(strategy_, &QComboBox::currentIndexChanged, this, changed);
    connect(schedule_, &QComboBox::currentIndexChanged, this, changed);
    connect(clock_, &QComboBox::currentIndexChanged, this, changed);
    connect(backend_, &QComboBox::currentIndexChanged, this, changed);
    for (QSpinBox* s : {devices_, microbatches_, chunks_, dp_, pp_, tp_, layers_, width_, batch_})
        connect(s, &QSpinBox::valueChanged, this, changed);
    connect(link_gbps_, &QDoubleSpinBox::valueChanged, this, changed);
    connect(overlap_, &QCheckBox::toggled, this, changed);
    connect(capacity_, &QLineEdit::editingFinished, this, changed);
    connect(bucket_, &QLineEdit::editingFinished, this, changed);
    setConfig(pd::RunConfig{});
}

void WhatIfPanel::setConfig(const pd::RunConfig& config) {
    updating_ = true;
    base_ = config;
    strategy_->setCurrentText(QString::fromLatin1(pd::name_of(config.strategy).data()));
    devices_->setValue(config.devices);
    schedule_->setCurrentIndex(
        schedule_->findData(QString::fromLatin1(pd::name_of(config.schedule).data())));
    microbatches_->setValue(config.effective_microbatches());
    chunks_->setValue(config.chunks);
    dp_->setValue(config.mesh.dp);
    pp_->setValue(config.mesh.pp);
    tp_->setValue(config.mesh.tp);
    layers_->setValue(config.layers);
    width_->setValue(config.width);
    batch_->setValue(config.batch);
    capacity_->setText(bytes_text(config.capacity_bytes));
    clock_->setCurrentIndex(
        clock_->findData(QString::fromLatin1(pd::name_of(config.clock).data())));
    backend_->setCurrentIndex(
        backend_->findData(QString::fromLatin1(pd::name_of(config.backend).data())));
    link_gbps_->setValue(config.link.gbit_per_s());
    overlap_->setChecked(config.overlap);
    bucket_->setText(bytes_text(config.bucket_bytes));
    updating_ = false;
    debounce_->stop();
    updateEnabled();
    problem_->hide();
    card_state_ = knobState();
}

// Read from the widgets rather than the config: a knob that shows a value the config
// rounds (a byte size typed as "64 MiB") still compares as the learner sees it.
QVariantList WhatIfPanel::knobState() const {
    QVariantList state;
    for (const QComboBox* c : findChildren<QComboBox*>()) state << c->currentIndex();
    for (const QSpinBox* s : findChildren<QSpinBox*>()) state << s->value();
    for (const QDoubleSpinBox* s : findChildren<QDoubleSpinBox*>()) state << s->value();
    for (const QCheckBox* c : findChildren<QCheckBox*>()) state << c->isChecked();
    for (const QLineEdit* e : findChildren<QLineEdit*>()) {
        // Spin boxes have line edits of their own; their values are above.
        if (qobject_cast<const QAbstractSpinBox*>(e->parent())) continue;
        const auto bytes = pd::parse_byte_size(e->text().toStdString());
        state << (bytes ? QVariant(static_cast<qulonglong>(*bytes)) : QVariant(e->text()));
    }
    return state;
}

bool WhatIfPanel::differsFromCard() const {
    return knobState() != card_state_;
}

pd::RunConfig WhatIfPanel::config() const {
    pd::RunConfig c = base_;
    c.strategy =
        pd::strategy_from_name(strategy_->currentText().toStdString()).value_or(c.strategy);
    c.devices = devices_->value();
    c.schedule = pd::schedule_from_name(schedule_->currentData().toString().toStdString())
                     .value_or(c.schedule);
    c.microbatches = microbatches_->value();
    c.chunks = chunks_->value();
    c.mesh = pd::Mesh{dp_->value(), pp_->value(), tp_->value()};
    c.layers = layers_->value();
    c.width = width_->value();
    c.batch = batch_->value();
    if (auto b = pd::parse_byte_size(capacity_->text().toStdString()))
        c.capacity_bytes = *b;
    else
        c.capacity_bytes = 0;  // validation names it
    const QString clock = clock_->currentData().toString();
    c.clock = clock == QStringLiteral("wall")     ? pd::ClockMode::wall
              : clock == QStringLiteral("device") ? pd::ClockMode::device
                                                  : pd::ClockMode::automatic;
    c.backend = pd::backend_from_name(backend_->currentData().toString().toStdString())
                    .value_or(pd::BackendKind::cpu);
    c.link.set_gbit_per_s(link_gbps_->value());
    c.overlap = overlap_->isChecked();
    if (auto b = pd::parse_byte_size(bucket_->text().toStdString()))
        c.bucket_bytes = *b;
    else
        c.bucket_bytes = 0;
    return c;
}

QString WhatIfPanel::problem() const {
    try {
        const pd::RunConfig c = config();
        // Messages name the knob by its key; knobs the strategy does not read are not named,
        // since the panel leaves them at their defaults.
        pd::ConfigSources names;
        for (const char* key : {"strategy", "devices", "schedule", "microbatches", "chunks", "dp",
                                "pp", "tp", "layers", "width", "batch", "capacity", "clock",
                                "link_gbps", "bucket_bytes", "backend"})
            if (pd::setting_applies(c, key)) names[key] = key;
        pd::validate(c, names);
        if (const std::string why = pd::backend_unavailable_reason(c.backend); !why.empty())
            return tr("backend: '%1' cannot run here: %2")
                .arg(QString::fromLatin1(pd::name_of(c.backend).data()),
                     QString::fromStdString(why));
    } catch (const pd::BadInput& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

void WhatIfPanel::knobChanged() {
    if (updating_) return;
    updateEnabled();
    const QString why = problem();
    problem_->setText(why);
    problem_->setVisible(!why.isEmpty());
    if (why.isEmpty())
        debounce_->start();
    else
        debounce_->stop();
}

void WhatIfPanel::emitIfValid() {
    if (problem().isEmpty()) emit configChanged(config());
}

// Only the knobs that mean something for the chosen strategy are editable.
void WhatIfPanel::updateEnabled() {
    const auto s = pd::strategy_from_name(strategy_->currentText().toStdString())
                       .value_or(pd::StrategyKind::single);
    const bool pipelined = s == pd::StrategyKind::pipeline || s == pd::StrategyKind::hybrid;
    const bool hybrid = s == pd::StrategyKind::hybrid;
    const bool bucketed = s == pd::StrategyKind::dp || s == pd::StrategyKind::ps ||
                          s == pd::StrategyKind::zero1 || s == pd::StrategyKind::zero2;
    devices_->setEnabled(s != pd::StrategyKind::single);
    schedule_->setEnabled(pipelined);
    microbatches_->setEnabled(pipelined);
    chunks_->setEnabled(pipelined &&
                        schedule_->currentData().toString() == QStringLiteral("interleaved"));
    dp_->setEnabled(hybrid);
    pp_->setEnabled(hybrid);
    tp_->setEnabled(hybrid);
    overlap_->setEnabled(s == pd::StrategyKind::dp);
    bucket_->setEnabled(bucketed);
}

}  // namespace pd::ui
