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
#include <algorithm>
#include <functional>
#include <optional>

#include "pd/error.h"
#include "pd/memory_plan.h"
#include "pd/run.h"
#include "pd/units.h"
#include "visualizer/timeline_palette.h"

namespace pd::ui {

namespace {

constexpr int kDebounceMs = 350;

// A spin box that reports a typed value above its maximum instead of silently refusing the
// keystroke (QSpinBox turns "2048" into "204" when the maximum is 1024).
class BoundedSpinBox : public QSpinBox {
  public:
    using QSpinBox::QSpinBox;
    std::function<void(std::optional<int> typed)> on_out_of_range;

  protected:
    QValidator::State validate(QString& input, int& pos) const override {
        bool ok = false;
        const int typed = cleanText(input).toInt(&ok);
        if (ok && typed > maximum()) {
            if (on_out_of_range) on_out_of_range(typed);
            return QValidator::Intermediate;
        }
        if (on_out_of_range) on_out_of_range(std::nullopt);
        return QSpinBox::validate(input, pos);
    }

  private:
    QString cleanText(QString text) const {
        if (!prefix().isEmpty() && text.startsWith(prefix())) text.remove(0, prefix().size());
        if (!suffix().isEmpty() && text.endsWith(suffix())) text.chop(suffix().size());
        return text.trimmed();
    }
};

BoundedSpinBox* spin(QWidget* parent, int lo, int hi) {
    auto* s = new BoundedSpinBox(parent);
    s->setRange(lo, hi);
    s->setKeyboardTracking(false);
    s->setToolTip(QObject::tr("%1 to %2").arg(lo).arg(hi));
    return s;
}

// The strategies by the names the cards use; the engine's key is the item's data.
constexpr std::pair<const char*, const char*> kStrategyNames[] = {
    {"single", QT_TRANSLATE_NOOP("WhatIfPanel", "Single device")},
    {"dp", QT_TRANSLATE_NOOP("WhatIfPanel", "Data parallel (DDP)")},
    {"ps", QT_TRANSLATE_NOOP("WhatIfPanel", "Parameter server")},
    {"pipeline", QT_TRANSLATE_NOOP("WhatIfPanel", "Pipeline parallel")},
    {"tp", QT_TRANSLATE_NOOP("WhatIfPanel", "Tensor parallel (Megatron)")},
    {"zero1", QT_TRANSLATE_NOOP("WhatIfPanel", "ZeRO-1: optimizer state sharded")},
    {"zero2", QT_TRANSLATE_NOOP("WhatIfPanel", "ZeRO-2: + gradients sharded")},
    {"zero3", QT_TRANSLATE_NOOP("WhatIfPanel", "ZeRO-3 / FSDP: + parameters sharded")},
    {"hybrid", QT_TRANSLATE_NOOP("WhatIfPanel", "Hybrid mesh (dp × pp × tp)")},
    {"cp", QT_TRANSLATE_NOOP("WhatIfPanel", "Context parallel (sequence shards)")},
    {"ep", QT_TRANSLATE_NOOP("WhatIfPanel", "Expert parallel (MoE, all-to-all)")},
};

bool is_size_text(const QString& text) {
    return pd::parse_byte_size(text.toStdString()).has_value();
}

QString bytes_text(std::size_t bytes) {
    return QString::fromStdString(pd::format_bytes(static_cast<double>(bytes)))
        .remove(QLatin1Char(' '));
}

}  // namespace

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent) {
    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    // In a narrow column a field goes under its label rather than widening the panel.
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    strategy_ = new QComboBox(this);
    for (const auto& [key, name] : kStrategyNames) {
        strategy_->addItem(tr(name), QString::fromLatin1(key));
        strategy_->setItemData(strategy_->count() - 1,
                               tr("Scenario key: strategy \"%1\"").arg(QString::fromLatin1(key)),
                               Qt::ToolTipRole);
    }
    devices_ = spin(this, 1, 16);
    schedule_ = new QComboBox(this);
    schedule_->addItem(tr("GPipe"), QStringLiteral("gpipe"));
    schedule_->addItem(tr("1F1B"), QStringLiteral("1f1b"));
    schedule_->addItem(tr("Interleaved 1F1B"), QStringLiteral("interleaved"));
    schedule_->addItem(tr("Zero bubble ZB-H1"), QStringLiteral("zb-h1"));
    schedule_->addItem(tr("Zero bubble ZB-V"), QStringLiteral("zb-v"));
    microbatches_ = spin(this, 1, 64);
    chunks_ = spin(this, 1, 8);
    dp_ = spin(this, 1, 16);
    pp_ = spin(this, 1, 16);
    tp_ = spin(this, 1, 16);
    layers_ = spin(this, 1, 32);
    width_ = spin(this, 8, 1024);
    width_->setSingleStep(32);
    batch_ = spin(this, 1, 4096);
    transformer_ = new QCheckBox(tr("Trans&former blocks (attention + MLP)"), this);
    transformer_->setToolTip(
        tr("Pre-LayerNorm transformer blocks on sequences (batch counts "
           "sequences); off: residual MLP blocks on samples"));
    heads_ = spin(this, 1, 64);
    heads_->setToolTip(
        tr("Attention heads per block: they divide the width, and tensor "
           "parallelism gives each device whole heads"));
    seq_len_ = spin(this, 1, 512);
    seq_len_->setToolTip(
        tr("Tokens per sequence: attention's probabilities grow with its "
           "square"));
    sequence_parallel_ = new QCheckBox(tr("Shard LayerNorm re&gions (sequence parallel)"), this);
    cp_load_balance_ = new QCheckBox(tr("Balance causal attention (two mirrored chunks)"), this);
    cp_load_balance_->setToolTip(
        tr("Context parallel: each device holds chunks r and 2n-1-r of every sequence, so "
           "every device's queries see as many keys"));
    cp_ulysses_ = new QCheckBox(tr("Ulysses all-to-all instead of ring attention"), this);
    cp_ulysses_->setToolTip(
        tr("Context parallel, DeepSpeed-Ulysses: an all-to-all gives each device every token "
           "of heads/n of the heads, attention runs there, and a second all-to-all brings the "
           "output back (the heads must divide by the devices of a ring)"));
    sequence_parallel_->setToolTip(
        tr("With tensor parallelism: each device keeps 1/tp of the tokens between the split "
           "parts; all-reduces become reduce-scatter + all-gather"));
    experts_ = spin(this, 0, 64);
    experts_->setObjectName(QStringLiteral("experts"));
    experts_->setToolTip(
        tr("A mixture of experts in place of each block's MLP: a router sends each token to "
           "its top-k experts (0: the dense MLP)"));
    top_k_ = spin(this, 1, 64);
    top_k_->setObjectName(QStringLiteral("topK"));
    top_k_->setToolTip(tr("Experts each token is routed to (Switch: 1, GShard: 2)"));
    capacity_factor_ = new QDoubleSpinBox(this);
    capacity_factor_->setObjectName(QStringLiteral("expertCapacityFactor"));
    capacity_factor_->setRange(0.05, 64.0);
    capacity_factor_->setSingleStep(0.25);
    capacity_factor_->setDecimals(2);
    capacity_factor_->setKeyboardTracking(false);
    capacity_factor_->setToolTip(
        tr("Each expert takes at most factor x top-k x sequence length / experts tokens of a "
           "sequence; the rest of its tokens are dropped (they keep only the residual)"));
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
    link_gbps_->setObjectName(QStringLiteral("linkBandwidth"));
    link_gbps_->setRange(0.001, 100000);
    link_gbps_->setDecimals(3);
    link_gbps_->setSuffix(QStringLiteral(" Gb/s"));
    link_gbps_->setKeyboardTracking(false);
    overlap_ = new QCheckBox(tr("Overlap all-reduce with backward"), this);
    bucket_ = new QLineEdit(this);
    bucket_->setPlaceholderText(QStringLiteral("256KiB"));
    steps_ = spin(this, 1, 200);
    steps_->setToolTip(tr("Training steps in the run: 1 to 200 here"));
    optimizer_ = new QComboBox(this);
    optimizer_->addItem(tr("AdamW"), QStringLiteral("adamw"));
    optimizer_->addItem(tr("SGD with momentum"), QStringLiteral("sgd"));
    optimizer_->addItem(tr("LAMB"), QStringLiteral("lamb"));
    optimizer_->addItem(tr("AdamW 8-bit"), QStringLiteral("adamw8bit"));
    optimizer_->setToolTip(
        tr("AdamW keeps two state values per parameter, SGD one; LAMB scales each layer's step "
           "by its trust ratio; AdamW 8-bit stores both states in 8 bits (single and dp)"));
    recompute_ = new QComboBox(this);
    recompute_->addItem(tr("None"), QStringLiteral("none"));
    recompute_->addItem(tr("Selective (GELU outputs)"), QStringLiteral("selective"));
    recompute_->addItem(tr("Full (each block's forward)"), QStringLiteral("full"));
    recompute_->setToolTip(
        tr("Activation recomputation: fewer activations kept, the same "
           "numbers, some forward work again in backward"));
    precision_ = new QComboBox(this);
    precision_->addItem(tr("fp32"), QStringLiteral("fp32"));
    precision_->addItem(tr("bf16 mixed (fp32 master weights)"), QStringLiteral("bf16-mixed"));
    precision_->setToolTip(
        tr("bf16 mixed: bf16 parameters, activations and gradients, fp32 "
           "master weights and optimizer state (CPU backend)"));
    accumulate_ = spin(this, 1, 64);
    accumulate_->setToolTip(
        tr("Gradient accumulation: micro-steps per optimizer step (single, dp, ZeRO)"));
    reduce_every_ = new QCheckBox(tr("Reduce ever&y micro-step (no no_sync)"), this);
    async_ = new QCheckBox(tr("Asynchronous &parameter server"), this);
    staleness_ = spin(this, 0, 16);
    staleness_->setToolTip(tr("Workers compute step k on the server's version k minus this"));
    problem_ = new QLabel(this);
    problem_->setWordWrap(true);
    problem_->setObjectName(QStringLiteral("whatIfProblem"));
    problem_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    problem_->hide();

    // A problem is said first, where the eye starts, and its knob is marked.
    form->addRow(problem_);
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
    form->addRow(QString(), transformer_);
    form->addRow(tr("Attention heads"), heads_);
    form->addRow(tr("Se&quence length"), seq_len_);
    form->addRow(QString(), sequence_parallel_);
    form->addRow(QString(), cp_load_balance_);
    form->addRow(QString(), cp_ulysses_);
    form->addRow(tr("E&xperts"), experts_);
    form->addRow(tr("Top-k experts"), top_k_);
    form->addRow(tr("Expert capacity factor"), capacity_factor_);
    form->addRow(tr("&Capacity per device"), capacity_);
    form->addRow(tr("C&lock"), clock_);
    form->addRow(tr("Bac&kend"), backend_);
    form->addRow(tr("&Link bandwidth"), link_gbps_);
    form->addRow(QString(), overlap_);
    form->addRow(tr("B&ucket size"), bucket_);
    form->addRow(tr("S&teps"), steps_);
    form->addRow(tr("&Optimizer"), optimizer_);
    form->addRow(tr("&Recompute"), recompute_);
    form->addRow(tr("Prec&ision"), precision_);
    form->addRow(tr("Accumulat&e"), accumulate_);
    form->addRow(QString(), reduce_every_);
    form->addRow(QString(), async_);
    form->addRow(tr("Max stale&ness"), staleness_);
    // Long item names (the CUDA reason, the strategy names) must not widen the panel past
    // its column: the combo boxes elide, and the full text is in the popup and tooltip.
    for (QComboBox* c : findChildren<QComboBox*>()) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(12);
    }
    knob_for_key_ = {{QStringLiteral("strategy"), strategy_},
                     {QStringLiteral("devices"), devices_},
                     {QStringLiteral("schedule"), schedule_},
                     {QStringLiteral("microbatches"), microbatches_},
                     {QStringLiteral("chunks"), chunks_},
                     {QStringLiteral("dp"), dp_},
                     {QStringLiteral("pp"), pp_},
                     {QStringLiteral("tp"), tp_},
                     {QStringLiteral("layers"), layers_},
                     {QStringLiteral("width"), width_},
                     {QStringLiteral("batch"), batch_},
                     {QStringLiteral("model"), transformer_},
                     {QStringLiteral("heads"), heads_},
                     {QStringLiteral("seq_len"), seq_len_},
                     {QStringLiteral("sequence_parallel"), sequence_parallel_},
                     {QStringLiteral("cp_load_balance"), cp_load_balance_},
                     {QStringLiteral("cp_algorithm"), cp_ulysses_},
                     {QStringLiteral("experts"), experts_},
                     {QStringLiteral("top_k"), top_k_},
                     {QStringLiteral("capacity_factor"), capacity_factor_},
                     {QStringLiteral("capacity"), capacity_},
                     {QStringLiteral("clock"), clock_},
                     {QStringLiteral("backend"), backend_},
                     {QStringLiteral("link_gbps"), link_gbps_},
                     {QStringLiteral("bucket_bytes"), bucket_},
                     {QStringLiteral("steps"), steps_},
                     {QStringLiteral("optimizer"), optimizer_},
                     {QStringLiteral("recompute"), recompute_},
                     {QStringLiteral("precision"), precision_},
                     {QStringLiteral("accumulate"), accumulate_},
                     {QStringLiteral("reduce_every_microstep"), reduce_every_},
                     {QStringLiteral("async"), async_},
                     {QStringLiteral("max_staleness"), staleness_}};
    for (auto it = knob_for_key_.cbegin(); it != knob_for_key_.cend(); ++it)
        if (auto* label = qobject_cast<QLabel*>(form->labelForField(it.value())))
            knob_label_[it.value()] = label->text().remove(QLatin1Char('&'));
    for (QSpinBox* s : findChildren<QSpinBox*>()) {
        auto* bounded = static_cast<BoundedSpinBox*>(s);
        bounded->on_out_of_range = [this, s](std::optional<int> typed) {
            // Qt puts the old value back when focus leaves: the message stays until the
            // learner edits again.
            if (!typed && !s->hasFocus()) return;
            const QString before = typed_problem_;
            typed_problem_ = typed ? tr("%1: at most %2 here (you typed %3)")
                                         .arg(knob_label_.value(s))
                                         .arg(s->maximum())
                                         .arg(*typed)
                                   : QString();
            typed_knob_ = typed ? s : nullptr;
            if (typed_problem_ != before) showProblem();
        };
    }

    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(kDebounceMs);
    connect(debounce_, &QTimer::timeout, this, &WhatIfPanel::emitIfValid);

    auto changed = [this] { knobChanged(); };
    connect(strategy_, &QComboBox::currentIndexChanged, this, changed);
    connect(schedule_, &QComboBox::currentIndexChanged, this, changed);
    connect(clock_, &QComboBox::currentIndexChanged, this, changed);
    connect(backend_, &QComboBox::currentIndexChanged, this, changed);
    for (QSpinBox* s : {devices_, microbatches_, chunks_, dp_, pp_, tp_, layers_, width_, batch_,
                        heads_, seq_len_, experts_, top_k_, accumulate_, staleness_})
        connect(s, &QSpinBox::valueChanged, this, changed);
    connect(recompute_, &QComboBox::currentIndexChanged, this, changed);
    connect(precision_, &QComboBox::currentIndexChanged, this, changed);
    connect(reduce_every_, &QCheckBox::toggled, this, changed);
    connect(async_, &QCheckBox::toggled, this, changed);
    connect(transformer_, &QCheckBox::toggled, this, changed);
    connect(sequence_parallel_, &QCheckBox::toggled, this, changed);
    connect(cp_load_balance_, &QCheckBox::toggled, this, changed);
    connect(cp_ulysses_, &QCheckBox::toggled, this, changed);
    connect(link_gbps_, &QDoubleSpinBox::valueChanged, this, changed);
    connect(capacity_factor_, &QDoubleSpinBox::valueChanged, this, changed);
    connect(overlap_, &QCheckBox::toggled, this, changed);
    connect(optimizer_, &QComboBox::currentIndexChanged, this, changed);
    connect(steps_, &QSpinBox::valueChanged, this, changed);
    connect(capacity_, &QLineEdit::editingFinished, this, changed);
    connect(bucket_, &QLineEdit::editingFinished, this, changed);
    setConfig(pd::RunConfig{});
}

WhatIfPanel::~WhatIfPanel() {
    // Children are destroyed after this body; a spin box that loses focus on the way
    // validates its text and must not call back into a panel half gone.
    for (QSpinBox* s : findChildren<QSpinBox*>())
        static_cast<BoundedSpinBox*>(s)->on_out_of_range = nullptr;
}

void WhatIfPanel::setConfig(const pd::RunConfig& config) {
    base_ = config;
    showKnobs(config);
    card_state_ = knobState();
}

void WhatIfPanel::showKnobs(const pd::RunConfig& config) {
    updating_ = true;
    strategy_->setCurrentIndex(
        strategy_->findData(QString::fromLatin1(pd::name_of(config.strategy).data())));
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
    transformer_->setChecked(config.model == pd::ModelKind::transformer);
    heads_->setValue(config.heads);
    seq_len_->setValue(config.seq_len);
    sequence_parallel_->setChecked(config.sequence_parallel);
    cp_load_balance_->setChecked(config.cp_load_balance);
    cp_ulysses_->setChecked(config.cp_ulysses);
    experts_->setValue(config.experts);
    top_k_->setValue(config.top_k);
    capacity_factor_->setValue(config.capacity_factor);
    capacity_->setText(bytes_text(config.capacity_bytes));
    clock_->setCurrentIndex(
        clock_->findData(QString::fromLatin1(pd::name_of(config.clock).data())));
    backend_->setCurrentIndex(
        backend_->findData(QString::fromLatin1(pd::name_of(config.backend).data())));
    link_gbps_->setValue(config.link.gbit_per_s());
    overlap_->setChecked(config.overlap);
    bucket_->setText(bytes_text(config.bucket_bytes));
    steps_->setValue(std::clamp(config.steps, steps_->minimum(), steps_->maximum()));
    optimizer_->setCurrentIndex(
        optimizer_->findData(QString::fromLatin1(pd::name_of(config.optimizer).data())));
    recompute_->setCurrentIndex(
        recompute_->findData(QString::fromLatin1(pd::name_of(config.recompute).data())));
    precision_->setCurrentIndex(
        precision_->findData(QString::fromLatin1(pd::name_of(config.precision).data())));
    accumulate_->setValue(config.accumulate);
    reduce_every_->setChecked(config.reduce_every_microstep);
    async_->setChecked(config.async_updates);
    staleness_->setValue(config.max_staleness);
    updating_ = false;
    debounce_->stop();
    updateEnabled();
    typed_problem_.clear();
    typed_knob_ = nullptr;
    showProblem();
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
    c.strategy = pd::strategy_from_name(strategy_->currentData().toString().toStdString())
                     .value_or(c.strategy);
    c.devices = devices_->value();
    c.schedule = pd::schedule_from_name(schedule_->currentData().toString().toStdString())
                     .value_or(c.schedule);
    c.microbatches = microbatches_->value();
    c.chunks = chunks_->value();
    c.mesh = pd::Mesh{dp_->value(), pp_->value(), tp_->value()};
    c.layers = layers_->value();
    c.width = width_->value();
    c.batch = batch_->value();
    c.model = transformer_->isChecked() ? pd::ModelKind::transformer : pd::ModelKind::mlp;
    c.heads = heads_->value();
    c.seq_len = seq_len_->value();
    c.sequence_parallel = sequence_parallel_->isEnabled() && sequence_parallel_->isChecked();
    c.cp_load_balance = cp_load_balance_->isEnabled() && cp_load_balance_->isChecked();
    c.cp_ulysses = cp_ulysses_->isEnabled() && cp_ulysses_->isChecked();
    c.experts = experts_->isEnabled() ? experts_->value() : 0;
    if (c.experts > 0) {
        c.top_k = top_k_->value();
        c.capacity_factor = capacity_factor_->value();
    }
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
    // A card's run longer than the knob's range keeps its length until the knob is moved.
    if (steps_->value() != std::clamp(base_.steps, steps_->minimum(), steps_->maximum()))
        c.steps = steps_->value();
    c.optimizer = pd::optimizer_from_name(optimizer_->currentData().toString().toStdString())
                      .value_or(pd::OptimizerKind::adamw);
    c.recompute = pd::recompute_from_name(recompute_->currentData().toString().toStdString())
                      .value_or(pd::RecomputeMode::none);
    c.precision = pd::precision_from_name(precision_->currentData().toString().toStdString())
                      .value_or(pd::Precision::fp32);
    // A knob the strategy does not read is left at its default, so that it cannot fail
    // validation on the strategy's behalf.
    c.accumulate = accumulate_->isEnabled() ? accumulate_->value() : 1;
    c.reduce_every_microstep = reduce_every_->isEnabled() && reduce_every_->isChecked();
    c.async_updates = async_->isEnabled() && async_->isChecked();
    c.max_staleness = staleness_->isEnabled() ? staleness_->value() : 0;
    return c;
}

QString WhatIfPanel::problem() const {
    return problemAndKnob().first;
}

std::pair<QString, QWidget*> WhatIfPanel::problemAndKnob() const {
    // A size the parser cannot read is named as such, not as "0 bytes".
    for (QLineEdit* e : {capacity_, bucket_})
        if (e->isEnabled() && !is_size_text(e->text()))
            return {tr("%1: '%2' is not a size; write a number and a unit, such as 64MiB, "
                       "1.5GiB or 512KB")
                        .arg(knob_label_.value(e), e->text()),
                    e};
    try {
        const pd::RunConfig c = config();
        // Messages name the knob by its key; knobs the strategy does not read are not named,
        // since the panel leaves them at their defaults.
        pd::ConfigSources names;
        for (const char* key : {"strategy",
                                "devices",
                                "schedule",
                                "microbatches",
                                "chunks",
                                "dp",
                                "pp",
                                "tp",
                                "layers",
                                "width",
                                "batch",
                                "model",
                                "heads",
                                "seq_len",
                                "sequence_parallel",
                                "cp_load_balance",
                                "cp_algorithm",
                                "experts",
                                "top_k",
                                "capacity_factor",
                                "capacity",
                                "clock",
                                "link_gbps",
                                "bucket_bytes",
                                "backend",
                                "recompute",
                                "accumulate",
                                "reduce_every_microstep",
                                "async",
                                "max_staleness"})
            if (pd::setting_applies(c, key)) names[key] = key;
        pd::validate(c, names);
        if (const std::string why = pd::backend_unavailable_reason(c.backend); !why.empty())
            return {tr("backend: '%1' cannot run here: %2")
                        .arg(QString::fromLatin1(pd::name_of(c.backend).data()),
                             QString::fromStdString(why)),
                    backend_};
        // The same refusal the run itself makes, said before it is started.
        if (const std::string why = pd::host_memory_shortage(c); !why.empty())
            return {QString::fromStdString(why), width_};
    } catch (const pd::BadInput& e) {
        return {QString::fromStdString(e.what()),
                knob_for_key_.value(QString::fromStdString(e.key()), nullptr)};
    }
    return {};
}

void WhatIfPanel::showProblem() {
    const auto [why, knob] = typed_problem_.isEmpty()
                                 ? problemAndKnob()
                                 : std::pair<QString, QWidget*>{typed_problem_, typed_knob_};
    problem_->setText(why);
    problem_->setVisible(!why.isEmpty());
    const QColor red =
        pd::vis::TimelinePalette::choose(pd::vis::ThemeChoice::follow_palette, palette()).oom;
    problem_->setStyleSheet(QStringLiteral("color: %1; font-weight: 600;").arg(red.name()));
    for (QWidget* w : knob_for_key_) {
        const bool marked = w == knob && !why.isEmpty();
        if (w->property("problem").toBool() == marked) continue;
        w->setProperty("problem", marked);
        // The knob at fault gets a red frame, so the message and the field read together.
        w->setStyleSheet(
            marked ? QStringLiteral("border: 2px solid %1; border-radius: 3px;").arg(red.name())
                   : QString());
    }
    emit problemChanged(why);
}

QWidget* WhatIfPanel::markedKnob() const {
    for (QWidget* w : knob_for_key_)
        if (w->property("problem").toBool()) return w;
    return nullptr;
}

void WhatIfPanel::knobChanged() {
    if (updating_) return;
    typed_problem_.clear();  // another change: the typed value was refused and is gone
    typed_knob_ = nullptr;
    updateEnabled();
    showProblem();
    const QString why = problem();
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
    const auto s = pd::strategy_from_name(strategy_->currentData().toString().toStdString())
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
    dp_->setEnabled(hybrid || s == pd::StrategyKind::cp || s == pd::StrategyKind::ep);
    pp_->setEnabled(hybrid);
    tp_->setEnabled(hybrid);
    overlap_->setEnabled(s == pd::StrategyKind::dp);
    bucket_->setEnabled(bucketed);
    const bool accumulates = s == pd::StrategyKind::single || s == pd::StrategyKind::dp ||
                             s == pd::StrategyKind::zero1 || s == pd::StrategyKind::zero2 ||
                             s == pd::StrategyKind::zero3;
    accumulate_->setEnabled(accumulates);
    reduce_every_->setEnabled(accumulates && s != pd::StrategyKind::single &&
                              accumulate_->value() > 1);
    async_->setEnabled(s == pd::StrategyKind::ps);
    const bool transformer = transformer_->isChecked();
    heads_->setEnabled(transformer);
    seq_len_->setEnabled(transformer);
    const bool tensor_parallel = s == pd::StrategyKind::tp || (hybrid && tp_->value() > 1);
    sequence_parallel_->setEnabled(transformer && tensor_parallel);
    cp_load_balance_->setEnabled(s == pd::StrategyKind::cp);
    cp_ulysses_->setEnabled(s == pd::StrategyKind::cp);
    experts_->setEnabled(transformer);
    top_k_->setEnabled(transformer && experts_->value() > 0);
    capacity_factor_->setEnabled(transformer && experts_->value() > 0);
    staleness_->setEnabled(s == pd::StrategyKind::ps && async_->isChecked());
}

}  // namespace pd::ui
