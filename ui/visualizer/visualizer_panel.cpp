#include "visualizer/visualizer_panel.h"

#include <QAction>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "pd/error.h"
#include "pd/exports.h"
#include "visualizer/data_view.h"
#include "visualizer/event_text.h"
#include "visualizer/loss_chart.h"
#include "visualizer/memory_bars.h"
#include "visualizer/metrics_panel.h"
#include "visualizer/metrics_text.h"
#include "visualizer/playback.h"
#include "visualizer/ring_diagram.h"
#include "visualizer/timeline_view.h"

namespace pd::vis {

namespace {
// The lower tabs' height at which a chart shows whole: its minimum (200 px) and the tab bar.
constexpr int kReadableLowerPx = 236;
}  // namespace

VisualizerPanel::VisualizerPanel(QWidget* parent)
    : QWidget(parent),
      note_(new QLabel(this)),
      note_caveat_(new QWidget(this)),
      reset_to_card_(new QPushButton(tr("Reset to card"), note_caveat_)),
      step_box_(new QSpinBox(this)),
      timeline_(new TimelineView(this)),
      compare_timeline_(new TimelineView(this)),
      clock_(new PlaybackClock(this)),
      playback_bar_(new PlaybackBar(clock_, this)),
      details_(new QLabel(this)),
      memory_mode_(new QComboBox(this)),
      memory_(new MemoryBarsView(this)),
      compare_memory_(new MemoryBarsView(this)),
      lower_tabs_(new QTabWidget(this)),
      loss_(new LossChart(this)),
      compare_loss_(new LossChart(this)),
      ring_(new RingDiagram(this)),
      compare_ring_(new RingDiagram(this)),
      data_(new DataView(this)),
      compare_data_(new DataView(this)),
      metrics_(new MetricsPanel(this)),
      compare_metrics_(new MetricsPanel(this)) {
    buildActions();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->setSpacing(4);

    note_->setWordWrap(true);
    note_->setTextFormat(Qt::PlainText);
    note_->setObjectName(QStringLiteral("visualizerNote"));
    QFont nf = note_->font();
    nf.setPointSizeF(nf.pointSizeF() * 1.1);
    note_->setFont(nf);
    note_->hide();
    layout->addWidget(note_);
    // Under a note that describes another run: say so, and offer the way back.
    auto* caveat_layout = new QHBoxLayout(note_caveat_);
    caveat_layout->setContentsMargins(0, 0, 0, 0);
    auto* caveat =
        new QLabel(tr("This note describes the card's run; the run shown has different settings."),
                   note_caveat_);
    caveat->setObjectName(QStringLiteral("visualizerNoteCaveat"));
    caveat->setWordWrap(true);
    // Muted and italic: it qualifies the note above rather than competing with it.
    QFont cf = caveat->font();
    cf.setItalic(true);
    caveat->setFont(cf);
    caveat->setForegroundRole(QPalette::PlaceholderText);
    reset_to_card_->setObjectName(QStringLiteral("resetToCard"));
    reset_to_card_->setToolTip(tr("Restore the card's settings and run them again"));
    caveat_layout->addWidget(caveat, 1);
    caveat_layout->addWidget(reset_to_card_, 0);
    note_caveat_->hide();
    layout->addWidget(note_caveat_);
    connect(reset_to_card_, &QPushButton::clicked, this, &VisualizerPanel::resetToCardRequested);

    auto* bar = new QToolBar(this);
    bar_ = bar;
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    bar->addAction(fit_step_);
    step_box_->setPrefix(tr("step "));
    step_box_->setToolTip(tr("The training step that \"Fit step\" shows"));
    bar->addWidget(step_box_);
    bar->addAction(fit_all_);
    bar->addSeparator();
    bar->addAction(export_screenshot_);
    bar->addAction(export_trace_);
    bar->addAction(copy_image_);
    layout->addWidget(bar);

    auto* split = new QSplitter(Qt::Vertical, this);
    split_ = split;
    auto* top = new QWidget(split);
    auto* top_layout = new QVBoxLayout(top);
    top_layout->setContentsMargins(0, 0, 0, 0);
    top_layout->setSpacing(2);
    // The timelines scroll when a small screen cannot hold every device's lanes; the
    // playback bar and the details line beneath them always stay in view.
    auto* timelines = new QWidget(top);
    auto* timelines_layout = new QVBoxLayout(timelines);
    timelines_layout->setContentsMargins(0, 0, 0, 0);
    timelines_layout->setSpacing(2);
    timelines_layout->addWidget(timeline_, 1);
    timelines_layout->addWidget(compare_timeline_, 1);
    timelines_scroll_ = new QScrollArea(top);
    timelines_scroll_->setObjectName(QStringLiteral("timelinesScroll"));
    timelines_scroll_->setWidget(timelines);
    timelines_scroll_->setWidgetResizable(true);
    timelines_scroll_->setFrameShape(QFrame::NoFrame);
    timelines_scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    timelines_scroll_->setMinimumHeight(120);
    top_layout->addWidget(timelines_scroll_, 1);
    top_layout->addWidget(playback_bar_);
    details_->setTextFormat(Qt::RichText);
    details_->setWordWrap(true);
    details_->setObjectName(QStringLiteral("eventDetails"));
    details_->setMinimumHeight(details_->fontMetrics().lineSpacing() * 2 + 4);
    details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    clearDetails();
    top_layout->addWidget(details_);
    compare_timeline_->hide();
    compare_timeline_->setLegendVisible(false);

    // The lower panels are tabs, each with the whole width (axes and labels readable); the
    // splitter above them gives the learner the height to share with the timelines.
    auto* memory_box = new QWidget(lower_tabs_);
    auto* memory_layout = new QVBoxLayout(memory_box);
    memory_layout->setContentsMargins(0, 0, 0, 0);
    memory_mode_->addItem(tr("Memory: peak over the run"));
    memory_mode_->addItem(tr("Memory: live at the playback cursor"));
    // The mode sits in the tab bar's corner (shown with the memory tab): the chart keeps
    // the height a row of its own would take.
    // Compared runs' bars sit side by side, at the same height and on one y-axis.
    auto* charts = new QHBoxLayout();
    charts->addWidget(memory_, 1);
    charts->addWidget(compare_memory_, 1);
    memory_layout->addLayout(charts, 1);
    compare_memory_->hide();
    auto* loss_box = new QWidget(lower_tabs_);
    auto* loss_layout = new QHBoxLayout(loss_box);
    loss_layout->setContentsMargins(0, 0, 0, 0);
    loss_layout->addWidget(loss_, 1);
    loss_layout->addWidget(compare_loss_, 1);
    compare_loss_->hide();
    // Compared runs' numbers stack, A above B, each with the tab's full width.
    auto* metrics_box = new QWidget;
    auto* metrics_layout = new QVBoxLayout(metrics_box);
    metrics_layout->setContentsMargins(0, 0, 0, 0);
    metrics_layout->addWidget(metrics_, 1);
    metrics_layout->addWidget(compare_metrics_, 1);
    compare_metrics_->hide();
    metrics_scroll_ = new QScrollArea(lower_tabs_);
    metrics_scroll_->setObjectName(QStringLiteral("metricsScroll"));
    metrics_scroll_->setWidget(metrics_box);
    metrics_scroll_->setWidgetResizable(true);
    metrics_scroll_->setFrameShape(QFrame::NoFrame);
    auto* ring_box = new QWidget(lower_tabs_);
    auto* ring_layout = new QHBoxLayout(ring_box);
    ring_layout->setContentsMargins(0, 0, 0, 0);
    ring_layout->addWidget(ring_, 1);
    ring_layout->addWidget(compare_ring_, 1);
    compare_ring_->hide();
    // Compared runs' data grids side by side (each device a row needs the height); the tab
    // scrolls when a short window cannot hold every row.
    auto* data_grids = new QWidget;
    auto* data_layout = new QHBoxLayout(data_grids);
    data_layout->setContentsMargins(0, 0, 0, 0);
    data_layout->addWidget(data_, 1);
    data_layout->addWidget(compare_data_, 1);
    compare_data_->hide();
    auto* data_box = new QScrollArea(lower_tabs_);
    data_box->setObjectName(QStringLiteral("dataScroll"));
    data_box->setWidget(data_grids);
    data_box->setWidgetResizable(true);
    data_box->setFrameShape(QFrame::NoFrame);
    data_box->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    lower_tabs_->setObjectName(QStringLiteral("lowerPanels"));
    lower_tabs_->setDocumentMode(true);
    memory_tab_ = lower_tabs_->addTab(memory_box, tr("&Memory"));
    loss_tab_ = lower_tabs_->addTab(loss_box, tr("&Loss and step time"));
    metrics_tab_ = lower_tabs_->addTab(metrics_scroll_, tr("Me&trics"));
    ring_tab_ = lower_tabs_->addTab(ring_box, tr("&Ring"));
    data_tab_ = lower_tabs_->addTab(data_box, tr("&Data"));
    lower_tabs_->setTabVisible(data_tab_, false);
    lower_tabs_->setCornerWidget(memory_mode_, Qt::TopRightCorner);
    connect(lower_tabs_, &QTabWidget::currentChanged, this,
            [this](int tab) { memory_mode_->setVisible(tab == memory_tab_); });
    lower_tabs_->setMinimumHeight(120);
    split->addWidget(top);
    split->addWidget(lower_tabs_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setChildrenCollapsible(false);
    connect(split, &QSplitter::splitterMoved, this, [this] { split_moved_by_user_ = true; });
    layout->addWidget(split, 1);

    for (TimelineView* t : {timeline_, compare_timeline_}) {
        connect(
            t, &TimelineView::mappingChanged, this,
            [this, t](const TimeMapping& m, std::int64_t origin) { shareMapping(m, origin, t); });
        // Times read as the ruler reads them (from the run's zero, not the step's origin).
        connect(t, &TimelineView::eventClicked, this, [this, t](const pd::TraceEvent& e) {
            showDetails(e, t->labelOrigin());
            kept_details_ = details_->text();
            emit eventSelected(e);
        });
        // The hover says what is under the pointer, a merged box's count and span included.
        connect(t, &TimelineView::hoverTextChanged, this, [this](const QString& text) {
            if (!text.isEmpty())
                details_->setText(QString(text)
                                      .replace(QStringLiteral("<hr>"), QStringLiteral(" · "))
                                      .replace(QStringLiteral("<br>"), QStringLiteral(" · ")));
            else if (!kept_details_.isEmpty())
                details_->setText(kept_details_);  // back to the clicked box
        });
    }
    timeline_->installEventFilter(this);
    connect(clock_, &PlaybackClock::cursorChanged, this, &VisualizerPanel::onCursor);
    connect(clock_, &PlaybackClock::playingChanged, this, [this](bool playing) {
        play_pause_->setText(playing ? tr("Pause") : tr("Play"));
        // Playing is about what happens over time, so memory follows the cursor.
        if (playing) memory_mode_->setCurrentIndex(1);
        // Stopping at the end shows the whole run again.
        if (!playing) onCursor(clock_->cursor());
    });
    connect(playback_bar_->slider(), &QAbstractSlider::sliderPressed, this,
            [this] { memory_mode_->setCurrentIndex(1); });
    connect(memory_mode_, &QComboBox::currentIndexChanged, this, [this](int i) {
        const auto mode = i == 1 ? MemoryBarsView::Mode::at_cursor : MemoryBarsView::Mode::peak;
        memory_->setMode(mode);
        compare_memory_->setMode(mode);
    });
}

VisualizerPanel::~VisualizerPanel() = default;

void VisualizerPanel::buildActions() {
    export_screenshot_ = new QAction(tr("Export timeline screenshot…"), this);
    export_screenshot_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    export_screenshot_->setToolTip(
        tr("Save the timeline with its memory bars and metrics as PNG (2×), "
           "SVG or PDF (Ctrl+Shift+S)"));
    export_trace_ = new QAction(tr("Export trace…"), this);
    export_trace_->setToolTip(tr("Save the Chrome Trace Event JSON; open it in ui.perfetto.dev"));
    copy_image_ = new QAction(tr("Copy image"), this);
    copy_image_->setToolTip(tr("Copy the picture to the clipboard"));
    // The timeline's own keys zoom (W/S, +/-) and pan (A/D, arrows), as in Perfetto.
    fit_step_ = new QAction(tr("Fit step"), this);
    fit_step_->setShortcut(QKeySequence(Qt::Key_F));
    fit_step_->setToolTip(tr("Show one training step (F)"));
    fit_all_ = new QAction(tr("Fit all"), this);
    fit_all_->setShortcut(QKeySequence(Qt::Key_0));
    fit_all_->setToolTip(tr("Show the whole run (0)"));
    play_pause_ = new QAction(tr("Play"), this);
    play_pause_->setShortcut(QKeySequence(Qt::Key_Space));
    play_pause_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    for (QAction* a : {fit_step_, fit_all_}) a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    for (QAction* a :
         {export_screenshot_, export_trace_, copy_image_, fit_step_, fit_all_, play_pause_}) {
        a->setEnabled(a == fit_step_ || a == fit_all_ || a == play_pause_ ? true : false);
        addAction(a);
    }
    connect(export_screenshot_, &QAction::triggered, this,
            &VisualizerPanel::chooseAndExportPicture);
    connect(export_trace_, &QAction::triggered, this, &VisualizerPanel::chooseAndExportTrace);
    connect(copy_image_, &QAction::triggered, this, &VisualizerPanel::copyImage);
    connect(fit_step_, &QAction::triggered, this, &VisualizerPanel::fitStep);
    connect(fit_all_, &QAction::triggered, this, &VisualizerPanel::fitAll);
    connect(play_pause_, &QAction::triggered, clock_, &PlaybackClock::toggle);
}

void VisualizerPanel::setRun(const pd::RunConfig& config,
                             std::shared_ptr<const pd::RunResult> result) {
    runs_[1].reset();
    // What the last run's boxes said does not describe this one, nor does a claim's frame.
    clearDetails();
    for (TimelineView* t : {timeline_, compare_timeline_}) t->setHighlightedDevices(std::nullopt);
    if (result)
        runs_[0] = Shown{config, result, pd::compute_metrics(result->trace, config), {}};
    else
        runs_[0].reset();
    showRun(0);
    showRun(1);
    if (!runs_[0]) clock_->setRange(0, 0, 0);  // nothing to play: no stale slider
    // A run still going is drawn, not exported: its files would miss the steps to come.
    for (QAction* a : {export_screenshot_, export_trace_, copy_image_})
        a->setEnabled(runs_[0].has_value() && !result->partial);
    // The box counts steps from 1, as every label does; the views index them from 0.
    step_box_->setRange(1, std::max(1, timeline_->data().step_count()));
    step_box_->setValue(timeline_->defaultStep() + 1);
    clock_origin_.reset();  // a new run: the playback starts over
    fitStep();
    sizeSplit();
}

void VisualizerPanel::setComparison(const pd::RunConfig& config,
                                    std::shared_ptr<const pd::RunResult> result,
                                    const QString& label) {
    if (!result) return clearComparison();
    clearDetails();
    runs_[1] = Shown{config, result, pd::compute_metrics(result->trace, config), label};
    showRun(1);
    fitStep();
    sizeSplit();
}

void VisualizerPanel::setRepeats(const std::vector<pd::RunMetrics>& repeats) {
    if (!runs_[0] || repeats.empty()) return;
    pd::pool_repeats(runs_[0]->metrics, repeats);
    showRun(0);
}

void VisualizerPanel::clearComparison() {
    runs_[1].reset();
    showRun(0);  // drops the "A:" from titles
    showRun(1);
    fitStep();
    sizeSplit();
}

void VisualizerPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // Until the learner drags the splitter, the timelines keep their natural height.
    if (!split_moved_by_user_) sizeSplit();
}

void VisualizerPanel::sizeSplit() {
    double natural = timeline_->preferredHeight(true, true) + playback_bar_->sizeHint().height() +
                     details_->minimumHeight() + 16;
    if (runs_[1]) natural += compare_timeline_->preferredHeight(true, false);
    const int total = split_->height() > 0 ? split_->height() : height();
    // The timelines get their natural height while the charts keep a readable share; on a
    // small screen both give way, and each part scrolls.
    const int charts_share =
        std::min(total - 120, std::clamp(static_cast<int>(total * 0.4), kReadableLowerPx, 330));
    const int top_px = std::min(static_cast<int>(natural), std::max(1, total - charts_share));
    split_->setSizes({top_px, std::max(1, total - top_px)});
}

void VisualizerPanel::clearDetails() {
    kept_details_.clear();
    details_->setText(
        tr("Hover over a box for its details; click to keep them here. Wheel zooms at "
           "the pointer, drag pans."));
}

QString VisualizerPanel::detailsText() const {
    return details_->text();
}

bool VisualizerPanel::hasComparison() const {
    return runs_[1].has_value();
}

void VisualizerPanel::setNote(const QString& note) {
    note_->setText(note);
    note_->setVisible(!note.isEmpty());
    setNoteDescribesRun(true);
}

QString VisualizerPanel::note() const {
    return note_->text();
}

void VisualizerPanel::setNoteDescribesRun(bool describes) {
    note_describes_run_ = describes;
    // The note stays readable (the learner may want what the card said); the line beneath
    // says which run it is about.
    note_caveat_->setVisible(!describes && !note_->text().isEmpty());
}

void VisualizerPanel::setTheme(ThemeChoice theme) {
    theme_ = theme;
    for (TimelineView* t : {timeline_, compare_timeline_}) t->setTheme(theme);
    for (MemoryBarsView* m : {memory_, compare_memory_}) m->setTheme(theme);
    for (LossChart* c : {loss_, compare_loss_}) c->setTheme(theme);
    for (RingDiagram* r : {ring_, compare_ring_}) r->setTheme(theme);
    for (DataView* d : {data_, compare_data_}) d->setTheme(theme);
}

void VisualizerPanel::showRun(int index) {
    TimelineView* t = index == 0 ? timeline_ : compare_timeline_;
    MemoryBarsView* m = index == 0 ? memory_ : compare_memory_;
    LossChart* lc = index == 0 ? loss_ : compare_loss_;
    RingDiagram* r = index == 0 ? ring_ : compare_ring_;
    DataView* dv = index == 0 ? data_ : compare_data_;
    MetricsPanel* p = index == 0 ? metrics_ : compare_metrics_;
    const auto& shown = runs_[index];
    if (!shown) {
        t->setRun(nullptr);
        m->setRun(nullptr, {});
        lc->setRun(nullptr, {});
        r->setRun(nullptr);
        dv->setRun(nullptr);
        if (index == 1) compare_data_->hide();
        lower_tabs_->setTabVisible(data_tab_, data_->hasData());
        p->clear();
        if (index == 1) {
            for (QWidget* w : std::initializer_list<QWidget*>{t, m, lc, r, p}) w->hide();
            loss_->setTitlePrefix(QString());
            data_->setTitlePrefix(QString());
        }
        shareMemoryScale();
        shareLossScale();
        return;
    }
    const QString title = (runs_[1] ? (index == 0 ? tr("A: ") : tr("B: ")) : QString()) +
                          (shown->label.isEmpty() ? QString() : shown->label + tr(" — ")) +
                          run_title(shown->config, shown->result->trace);
    t->setRun(shown->result, shown->metrics.bubble, title, shown->metrics.stage_boundaries);
    t->setMaximumHeight(static_cast<int>(t->preferredHeight(true, t->legendVisible()) * 1.3));
    m->setRun(shown->result, shown->metrics);
    m->setTitlePrefix(runs_[1] ? (index == 0 ? tr("A: ") : tr("B: ")) : QString());
    lc->setRun(shown->result, shown->metrics);
    lc->setTitlePrefix(runs_[1] ? (index == 0 ? tr("A: ") : tr("B: ")) : QString());
    r->setRun(shown->result);
    r->setVisible(r->hasRingSteps());
    lower_tabs_->setTabVisible(
        ring_tab_, ring_->hasRingSteps() || (runs_[1] && compare_ring_->hasRingSteps()));
    dv->setRun(shown->result);
    dv->setTitlePrefix(runs_[1] ? (index == 0 ? tr("A: ") : tr("B: ")) : QString());
    if (index == 1) compare_data_->setVisible(compare_data_->hasData());
    lower_tabs_->setTabVisible(data_tab_,
                               data_->hasData() || (runs_[1] && compare_data_->hasData()));
    // An fp16 run's chart shows its loss scale where the step time would be.
    const bool scaled = loss_->lossScaleSeries() || (runs_[1] && compare_loss_->lossScaleSeries());
    lower_tabs_->setTabText(loss_tab_,
                            scaled ? tr("&Loss and loss scale") : tr("&Loss and step time"));
    p->setRun(shown->config, *shown->result, shown->metrics, title);
    shareMemoryScale();
    shareLossScale();
    if (index == 1) {
        // A's title gains its "A:" now that there is a B.
        if (runs_[0])
            timeline_->setRun(runs_[0]->result, runs_[0]->metrics.bubble,
                              tr("A: ") + run_title(runs_[0]->config, runs_[0]->result->trace),
                              runs_[0]->metrics.stage_boundaries);
        memory_->setTitlePrefix(tr("A: "));
        loss_->setTitlePrefix(tr("A: "));
        data_->setTitlePrefix(tr("A: "));
        if (runs_[0])
            metrics_->setRun(runs_[0]->config, *runs_[0]->result, runs_[0]->metrics,
                             tr("A: ") + run_title(runs_[0]->config, runs_[0]->result->trace));
        for (QWidget* w : std::initializer_list<QWidget*>{t, m, lc, p}) w->show();
    }
}

void VisualizerPanel::shareMemoryScale() {
    // Two runs' bars on two scales would make the smaller look as large: share the axis.
    const double top = runs_[0] && runs_[1] ? std::max(memory_->naturalTopBytes(),
                                                       compare_memory_->naturalTopBytes())
                                            : 0.0;
    memory_->setSharedTopBytes(top);
    compare_memory_->setSharedTopBytes(top);
}

void VisualizerPanel::shareLossScale() {
    if (runs_[0] && runs_[1]) {
        loss_->setSharedExtents(compare_loss_->naturalExtents());
        compare_loss_->setSharedExtents(loss_->naturalExtents());
    } else {
        loss_->setSharedExtents(std::nullopt);
        compare_loss_->setSharedExtents(std::nullopt);
    }
}

namespace {

enum class EvidenceView { timeline, memory, loss, metrics, ring, data };

bool starts_with(const std::string& s, std::string_view prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// Which view shows what a claim reads.
EvidenceView evidence_view(const pd::ClaimOutcome& c) {
    using Kind = pd::Claim::Kind;
    if (c.kind == Kind::status && c.timed_out) return EvidenceView::data;
    if (c.kind == Kind::status)
        return c.status == pd::RunStatus::out_of_memory ? EvidenceView::memory : EvidenceView::loss;
    if (c.kind != Kind::metric) return EvidenceView::loss;
    const std::string& m = c.metric;
    if (starts_with(m, "peak.") || m == "capacity" || starts_with(m, "model_state.") ||
        m == "activations.analytic")
        return EvidenceView::memory;
    if (m == "step_time" || m == "samples_per_s" || starts_with(m, "loss.") ||
        m == "steps_completed" || starts_with(m, "loss_scale.") || m == "steps.skipped" ||
        starts_with(m, "grad."))
        return EvidenceView::loss;
    if (m == "ring_steps_per_collective") return EvidenceView::ring;
    if (starts_with(m, "data.")) return EvidenceView::data;
    if (m == "restarts" || starts_with(m, "restart.") || starts_with(m, "steps.") || m == "goodput")
        return m == "steps.skipped" ? EvidenceView::loss : EvidenceView::timeline;
    if (starts_with(m, "bubble") || starts_with(m, "busy") || m == "idle" || m == "comm" ||
        starts_with(m, "exposed_comm") || m == "overlapped_comm" || m == "max_microbatches_alive")
        return EvidenceView::timeline;
    return EvidenceView::metrics;
}

}  // namespace

QRect VisualizerPanel::visiblePart(const QWidget* w, const QRect& rect) const {
    if (!w->isVisible()) return {};
    // Clipped by every ancestor up to the window (a scroll area's viewport hides the rest).
    QRect r = QRect(w->mapTo(window(), rect.topLeft()), rect.size());
    for (const QWidget* p = w; p && p != window(); p = p->parentWidget())
        r = r.intersected(QRect(p->mapTo(window(), QPoint(0, 0)), p->size()));
    r = r.intersected(window()->rect());
    if (r.isEmpty()) return {};
    return QRect(mapFrom(window(), r.topLeft()), r.size());
}

QRect VisualizerPanel::revealEvidence(const pd::ClaimOutcome& claim) {
    if (!runs_[0]) return {};
    const bool compared = claim.variant >= 0 && runs_[1].has_value();
    EvidenceView view = evidence_view(claim);
    if (view == EvidenceView::ring && !lower_tabs_->isTabVisible(ring_tab_))
        view = EvidenceView::timeline;
    if (view == EvidenceView::data && !lower_tabs_->isTabVisible(data_tab_))
        view = EvidenceView::metrics;
    for (TimelineView* t : {timeline_, compare_timeline_}) t->setHighlightedDevices(std::nullopt);
    for (MetricsPanel* p : {metrics_, compare_metrics_}) p->clearHighlight();
    for (MemoryBarsView* m : {memory_, compare_memory_}) m->highlight(std::nullopt, -1);
    const auto show_tab = [this](int tab, std::initializer_list<QWidget*> parts) {
        lower_tabs_->setCurrentIndex(tab);
        // A panel squeezed below its charts' height gets it back: axes and labels whole.
        if (lower_tabs_->height() < kReadableLowerPx) {
            const int total = split_->height();
            split_->setSizes({std::max(1, total - kReadableLowerPx), kReadableLowerPx});
        }
        QRect r;
        for (QWidget* w : parts)
            if (w->isVisible()) r = r.united(visiblePart(w, w->rect()));
        return r;
    };
    switch (view) {
        case EvidenceView::memory: {
            // The claim's category (peak.activations, model_state.gradients) on its device.
            std::optional<pd::MemoryCategory> category;
            for (const char* prefix : {"peak.", "model_state."})
                if (claim.metric.rfind(prefix, 0) == 0)
                    category = pd::memory_category_from_name(
                        std::string_view(claim.metric).substr(std::strlen(prefix)));
            const int device = claim.devices.empty()
                                   ? (claim.kind == pd::Claim::Kind::status && runs_[0]->result->oom
                                          ? runs_[0]->result->oom->device
                                          : -1)
                                   : claim.devices.front();
            memory_->highlight(category, device);
            compare_memory_->highlight(category, compared ? device : -1);
            if (compared) return show_tab(memory_tab_, {memory_, compare_memory_});
            return show_tab(memory_tab_, {memory_});
        }
        case EvidenceView::loss:
            if (compared) return show_tab(loss_tab_, {loss_, compare_loss_});
            return show_tab(loss_tab_, {loss_});
        case EvidenceView::ring:
            return show_tab(ring_tab_, {ring_});
        case EvidenceView::data:
            if (compared) return show_tab(data_tab_, {data_, compare_data_});
            return show_tab(data_tab_, {data_});
        case EvidenceView::metrics: {
            lower_tabs_->setCurrentIndex(metrics_tab_);
            if (lower_tabs_->height() < kReadableLowerPx) {
                const int total = split_->height();
                split_->setSizes({std::max(1, total - kReadableLowerPx), kReadableLowerPx});
            }
            // The figure's row (or table, or lines) selected and scrolled into sight; with a
            // comparison, B's (A's is above it).
            const int device = claim.devices.empty() ? -1 : claim.devices.front();
            const QRect a = metrics_->highlight(claim.metric, device);
            const QRect b = compared ? compare_metrics_->highlight(claim.metric, device) : QRect();
            MetricsPanel* shown = compared ? compare_metrics_ : metrics_;
            const QRect part = compared ? b : a;
            const QPoint centre = shown->mapTo(metrics_scroll_->widget(), part.center());
            metrics_scroll_->ensureVisible(centre.x(), centre.y(), 0, part.height() / 2 + 4);
            QRect r = visiblePart(shown, part);
            if (compared) r = r.united(visiblePart(metrics_, a));
            return r;
        }
        case EvidenceView::timeline:
            break;
    }
    // The timeline: a figure step, the devices the claim reads scrolled into sight.
    if (!runs_[0]->result->trace.restarts.empty()) {
        fitAll();  // a job that restarted: every attempt, the restart between them
    } else if (timeline_->data().step_count() > 0) {
        const int step = timeline_->defaultStep();
        step_box_->setValue(step + 1);
        fitStep();
    }
    // The timelines take the height they need from the lower tabs (which keep a strip, their
    // tab bar and a little of the chart, to be brought back).
    {
        double natural = timeline_->preferredHeight(true, timeline_->legendVisible()) +
                         playback_bar_->sizeHint().height() + details_->minimumHeight() + 16;
        if (runs_[1]) natural += compare_timeline_->preferredHeight(true, false);
        const int total = split_->height();
        const int top = std::min(static_cast<int>(natural), total - 130);
        if (top > split_->sizes().value(0)) split_->setSizes({top, std::max(1, total - top)});
    }
    TimelineView* t = compared ? compare_timeline_ : timeline_;
    const int devices = std::max(1, t->data().devices());
    const int first = claim.devices.empty() ? 0 : std::clamp(claim.devices.front(), 0, devices - 1);
    const int last =
        claim.devices.empty() ? devices - 1 : std::clamp(claim.devices.back(), 0, devices - 1);
    timeline_->setHighlightedDevices(std::nullopt);
    compare_timeline_->setHighlightedDevices(std::nullopt);
    t->setHighlightedDevices(std::pair{first, last});
    const QSizeF size = t->size();
    QRectF lanes =
        t->laneRect(first, pd::StreamKind::compute, size, true, t->legendVisible())
            .united(t->laneRect(last, pd::StreamKind::comm, size, true, t->legendVisible()));
    // From the top: the run's header stays in sight whenever the lanes fit below it.
    timelines_scroll_->verticalScrollBar()->setValue(0);
    timelines_scroll_->ensureVisible(
        static_cast<int>(lanes.center().x()),
        t->mapTo(timelines_scroll_->widget(), lanes.center().toPoint()).y(), 0,
        static_cast<int>(lanes.height() / 2) + 4);
    return visiblePart(t, lanes.toAlignedRect());
}

void VisualizerPanel::fitStep() {
    if (!runs_[0]) return;
    const int step = step_box_->value() - 1;
    // Every run starts its ruler at the start of the same step, on one shared scale (a run
    // that finished no step shows its whole run, as Fit all does).
    std::int64_t origins[2] = {0, 0};
    std::optional<std::pair<std::int64_t, std::int64_t>> shown;
    bool steps = false;
    TimelineView* views[2] = {timeline_, compare_timeline_};
    for (int i = 0; i < 2; ++i) {
        if (!runs_[i]) continue;
        const TimelineView::StepFit fit = views[i]->stepFit(step);
        origins[i] = fit.origin_ns;
        shown = shown ? std::pair{std::min(shown->first, fit.begin_ns),
                                  std::max(shown->second, fit.end_ns)}
                      : std::pair{fit.begin_ns, fit.end_ns};
        steps = steps || fit.is_step;
    }
    const double width = timeline_->width() > 0 ? timeline_->width() : 1200.0;
    // The ruler's zero is the step's first event: what lies left of it is the step before.
    const TimeMapping m = TimelineView::fittedMapping(
        static_cast<double>(shown->first),
        static_cast<double>(std::max(shown->second, shown->first + 1000)), width, !steps);
    for (int i = 0; i < 2; ++i) {
        views[i]->setMapping(m, origins[i]);
        views[i]->setFocusStep(step);
    }
    fitted_ = Fitted{true, m, timeline_->width()};
    updatePlaybackRange();
}

void VisualizerPanel::fitAll() {
    if (!runs_[0]) return;
    std::int64_t t0 = timeline_->runRange().first, t1 = timeline_->runRange().second;
    if (runs_[1]) {
        t0 = std::min(t0, compare_timeline_->runRange().first);
        t1 = std::max(t1, compare_timeline_->runRange().second);
    }
    const double width = timeline_->width() > 0 ? timeline_->width() : 1200.0;
    const TimeMapping m =
        TimelineView::fittedMapping(static_cast<double>(t0), static_cast<double>(t1), width);
    for (TimelineView* t : {timeline_, compare_timeline_}) {
        t->setMapping(m, 0);
        t->setFocusStep(std::nullopt);
    }
    fitted_ = Fitted{false, m, timeline_->width()};
    updatePlaybackRange();
}

bool VisualizerPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == timeline_ && event->type() == QEvent::Resize && fitted_ && runs_[0] &&
        timeline_->width() != fitted_->width) {
        const TimeMapping& now = timeline_->mapping();
        if (now.start_ns == fitted_->mapping.start_ns &&
            now.ns_per_px == fitted_->mapping.ns_per_px) {
            if (fitted_->step)
                fitStep();
            else
                fitAll();
        } else {
            fitted_.reset();  // zoomed or panned: the view is the learner's
        }
    }
    return QWidget::eventFilter(watched, event);
}

void VisualizerPanel::shareMapping(const TimeMapping& mapping, std::int64_t origin,
                                   const TimelineView* source) {
    if (syncing_) return;
    syncing_ = true;
    TimelineView* other = source == timeline_ ? compare_timeline_ : timeline_;
    // Zoom and pan keep each run's own origin: only the scale and offset are shared.
    if (other->isVisible() || other == timeline_) other->setMapping(mapping, other->origin());
    syncing_ = false;
    (void)origin;
}

void VisualizerPanel::updatePlaybackRange() {
    if (!runs_[0]) return;
    // A cursor the learner placed keeps its moment of the run when the view is fitted anew
    // (within what the fit shows, so the playhead stays in sight); it is not sent to the end.
    std::optional<std::int64_t> moment;
    if (clock_origin_ && clock_->cursor() < clock_->end())
        moment = clock_->cursor() + *clock_origin_;
    std::int64_t b = timeline_->runRange().first - timeline_->origin();
    std::int64_t e = timeline_->runRange().second - timeline_->origin();
    if (runs_[1]) {
        b = std::min(b, compare_timeline_->runRange().first - compare_timeline_->origin());
        e = std::max(e, compare_timeline_->runRange().second - compare_timeline_->origin());
    }
    // A run that finished no step plays its whole range at the pace of one step.
    const double median_ns = runs_[0]->metrics.median_step_time_s * 1e9;
    const double step_ns = median_ns > 0 ? std::max(median_ns, 1e3) : 0.0;
    clock_->setRange(b, e, step_ns);
    // Compared runs' rulers count from the slider's zero.
    for (TimelineView* t : {timeline_, compare_timeline_}) t->setTimeZero(b);
    clock_origin_ = timeline_->origin();
    if (moment) {
        const TimeMapping& m = timeline_->mapping();
        const double width = timeline_->width() > 0 ? timeline_->width() : 1200.0;
        const double plot_w =
            std::max(1.0, width - TimelineView::kLeftMargin - TimelineView::kRightMargin);
        clock_->setCursor(std::clamp(*moment - *clock_origin_,
                                     static_cast<std::int64_t>(std::llround(m.start_ns)),
                                     static_cast<std::int64_t>(std::llround(m.end_ns(plot_w)))));
    }
}

void VisualizerPanel::onCursor(std::int64_t display_ns) {
    // At the end of the range everything has happened: show it all, without a cursor line.
    const bool at_end = display_ns >= clock_->end() && !clock_->isPlaying();
    for (TimelineView* t : {timeline_, compare_timeline_})
        t->setPlaybackCursor(at_end ? std::nullopt : std::optional<std::int64_t>(display_ns));
    memory_->setCursorTime(display_ns + timeline_->origin());
    ring_->setCursorTime(display_ns + timeline_->origin());
    if (runs_[1]) {
        compare_memory_->setCursorTime(display_ns + compare_timeline_->origin());
        compare_ring_->setCursorTime(display_ns + compare_timeline_->origin());
    }
    // The timelines follow the cursor themselves (TimelineView::setPlaybackCursor).
}

void VisualizerPanel::showDetails(const pd::TraceEvent& e, std::int64_t origin) {
    details_->setText(
        describe_event(e, origin).replace(QStringLiteral("<br>"), QStringLiteral(" · ")));
}

PictureOptions VisualizerPanel::pictureOptions() const {
    PictureOptions o;
    o.width = std::max(1000, timeline_->width());
    o.theme =
        TimelinePalette::choose(theme_, palette()).dark ? ThemeChoice::dark : ThemeChoice::light;
    TimeMapping m = timeline_->mapping();
    // The picture may be wider than the widget: keep the same visible time range.
    const double widget_plot =
        std::max(1.0, timeline_->width() - TimelineView::kLeftMargin - TimelineView::kRightMargin);
    const double picture_plot = o.width - TimelineView::kLeftMargin - TimelineView::kRightMargin;
    if (timeline_->width() > 0) m.ns_per_px *= widget_plot / picture_plot;
    m.left_px = TimelineView::kLeftMargin;
    o.mapping = m;
    o.origins = {timeline_->origin(), compare_timeline_->origin()};
    o.cursor_ns = timeline_->playbackCursor();
    o.focus_step = timeline_->focusStep();
    // A picture carries the note only when the note describes the run in it.
    if (note_describes_run_) o.note = note_->text();
    return o;
}

bool VisualizerPanel::exportPicture(const QString& path, QString* error) const {
    std::vector<PictureRun> runs;
    for (const auto& r : runs_)
        if (r) runs.push_back({r->config, r->result});
    return export_picture(path, runs, pictureOptions(), error);
}

bool VisualizerPanel::exportTrace(const QString& path, QString* error) const {
    if (!runs_[0]) {
        if (error) *error = tr("there is no run to export");
        return false;
    }
    // Whole or not at all (pd::AtomicFile): an export that fails leaves the old file.
    try {
        pd::write_chrome_trace_file(path.toStdString(), runs_[0]->result->trace);
    } catch (const pd::Error& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

QImage VisualizerPanel::renderImage() const {
    std::vector<PictureRun> runs;
    for (const auto& r : runs_)
        if (r) runs.push_back({r->config, r->result});
    if (runs.empty()) return {};
    return render_picture(runs, pictureOptions(), 2.0);
}

QString VisualizerPanel::suggestedExportName(const QString& what, const QString& ext) const {
    // "pp-gpipe-bubble_pipeline-1f1b_timeline.png": the card, then what ran, then what it is.
    QStringList parts;
    if (!export_base_name_.isEmpty()) parts << export_base_name_;
    if (runs_[0] && runs_[0]->result->trace.origin.imported) {
        parts << QStringLiteral("imported-%1rank").arg(runs_[0]->result->trace.devices);
    } else if (runs_[0]) {
        QString run = QString::fromLatin1(pd::name_of(runs_[0]->config.strategy).data());
        if (runs_[0]->config.strategy == pd::StrategyKind::pipeline ||
            runs_[0]->config.strategy == pd::StrategyKind::hybrid)
            run += QLatin1Char('-') +
                   QString::fromLatin1(pd::name_of(runs_[0]->config.schedule).data());
        run += QStringLiteral("-%1dev").arg(runs_[0]->config.devices);
        parts << run;
    }
    if (runs_[1]) parts << QStringLiteral("compared");
    parts << what;
    QString name = parts.join(QLatin1Char('_')) + QLatin1Char('.') + ext;
    static const QRegularExpression unsafe(QStringLiteral("[^A-Za-z0-9._-]+"));
    return name.replace(unsafe, QStringLiteral("-"));
}

namespace {

// The folder the last export went to, kept across runs of the app; the Pictures folder first.
QString export_folder() {
    const QString saved = QSettings().value(QStringLiteral("export/last_folder")).toString();
    if (!saved.isEmpty() && QDir(saved).exists()) return saved;
    const QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    return !pictures.isEmpty() && QDir(pictures).exists() ? pictures : QDir::homePath();
}

void remember_export_folder(const QString& path) {
    QSettings().setValue(QStringLiteral("export/last_folder"), QFileInfo(path).absolutePath());
}

}  // namespace

void VisualizerPanel::chooseAndExportPicture() {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export timeline screenshot"),
        QDir(export_folder())
            .filePath(suggestedExportName(QStringLiteral("timeline"), QStringLiteral("png"))),
        tr("PNG image, 2× (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty()) return;
    remember_export_folder(path);
    QString error;
    emit message(exportPicture(path, &error) ? tr("Saved %1").arg(path)
                                             : tr("Export failed: %1").arg(error));
}

void VisualizerPanel::chooseAndExportTrace() {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export trace"),
        QDir(export_folder())
            .filePath(suggestedExportName(QStringLiteral("trace"), QStringLiteral("json"))),
        tr("Chrome Trace Event JSON (*.json)"));
    if (path.isEmpty()) return;
    remember_export_folder(path);
    QString error;
    emit message(exportTrace(path, &error) ? tr("Saved %1 (open it in ui.perfetto.dev)").arg(path)
                                           : tr("Export failed: %1").arg(error));
}

void VisualizerPanel::copyImage() {
    const QImage image = renderImage();
    if (image.isNull()) return;
    QGuiApplication::clipboard()->setImage(image);
    emit message(tr("Copied the timeline picture"));
}

}  // namespace pd::vis
