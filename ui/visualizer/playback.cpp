#include "visualizer/playback.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QPixmap>
#include <QSignalBlocker>
#include <QSlider>
#include <QToolButton>
#include <algorithm>
#include <cmath>
#include <iterator>

#include "visualizer/format.h"

namespace pd::vis {

namespace {
constexpr int kSliderSteps = 10000;
constexpr double kSpeeds[] = {0.25, 0.5, 1.0, 2.0, 4.0, 8.0};

// Play (a triangle) or pause (two bars) in the button's own text colour: the style's
// stock icons are dark whatever the theme and vanish on a dark button.
QIcon media_icon(bool playing, const QColor& colour, qreal dpr) {
    const int px = 16;
    QPixmap pixmap(QSize(px, px) * dpr);
    pixmap.setDevicePixelRatio(dpr);
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setPen(Qt::NoPen);
    p.setBrush(colour);
    if (playing) {
        p.drawRect(QRectF(3.5, 2.5, 3.5, 11));
        p.drawRect(QRectF(9, 2.5, 3.5, 11));
    } else {
        QPainterPath path;
        path.moveTo(4, 2);
        path.lineTo(13.5, 8);
        path.lineTo(4, 14);
        path.closeSubpath();
        p.drawPath(path);
    }
    return QIcon(pixmap);
}
}  // namespace

PlaybackClock::PlaybackClock(QObject* parent) : QObject(parent) {
    timer_.setInterval(16);  // about 60 frames a second
    connect(&timer_, &QTimer::timeout, this, &PlaybackClock::tick);
}

void PlaybackClock::setRange(std::int64_t begin_ns, std::int64_t end_ns, double step_ns) {
    // Stop first, tell afterwards: a listener to playingChanged must find the new range and
    // cursor, not the last run's cursor (which a view would scroll to).
    const bool was_playing = playing_;
    playing_ = false;
    timer_.stop();
    begin_ = begin_ns;
    end_ = std::max(end_ns, begin_ns);
    step_ns_ = step_ns > 0 ? step_ns : std::max(1.0, static_cast<double>(end_ - begin_));
    cursor_ = end_;  // a fresh run shows everything until the learner presses play
    emit rangeChanged();
    emit cursorChanged(cursor_);
    if (was_playing) emit playingChanged(false);
}

double PlaybackClock::traceNsPerSecond() const {
    return step_ns_ / kSecondsPerStepAt1x * speed_;
}

void PlaybackClock::play() {
    if (playing_) return;
    if (cursor_ >= end_) setCursor(begin_);  // replay from the start
    playing_ = true;
    elapsed_.start();
    timer_.start();
    emit playingChanged(true);
}

void PlaybackClock::pause() {
    if (!playing_) return;
    playing_ = false;
    timer_.stop();
    emit playingChanged(false);
}

void PlaybackClock::toggle() {
    playing_ ? pause() : play();
}

void PlaybackClock::setSpeed(double speed) {
    speed_ = std::clamp(speed, kSpeeds[0], kSpeeds[std::size(kSpeeds) - 1]);
}

void PlaybackClock::setCursor(std::int64_t display_ns) {
    const std::int64_t c = std::clamp(display_ns, begin_, end_);
    if (c == cursor_) return;
    cursor_ = c;
    emit cursorChanged(cursor_);
}

void PlaybackClock::advance(double real_ms) {
    const double step = traceNsPerSecond() * real_ms / 1000.0;
    setCursor(cursor_ + static_cast<std::int64_t>(std::llround(step)));
    if (cursor_ >= end_) pause();
}

void PlaybackClock::tick() {
    const double ms = static_cast<double>(elapsed_.restart());
    advance(ms);
}

PlaybackBar::PlaybackBar(PlaybackClock* clock, QWidget* parent)
    : QWidget(parent),
      clock_(clock),
      play_(new QToolButton(this)),
      speed_(new QComboBox(this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      time_(new QLabel(this)) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    play_->setToolTip(
        tr("Play / pause: the cursor sweeps the timeline and events appear as it passes"));
    play_->setAutoRaise(true);
    play_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    for (double s : kSpeeds) speed_->addItem(QString(), s);
    speed_->setCurrentIndex(2);
    speed_->setToolTip(
        tr("Playback speed: how much of the run's time plays in one real second (the run is "
           "far faster than real time). The middle speed plays one training step in %1 s.")
            .arg(PlaybackClock::kSecondsPerStepAt1x));
    speed_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    labelSpeeds();
    slider_->setRange(0, kSliderSteps);
    slider_->setToolTip(tr("Scrub through the run"));
    time_->setMinimumWidth(150);
    layout->addWidget(play_);
    layout->addWidget(speed_);
    layout->addWidget(slider_, 1);
    layout->addWidget(time_);

    connect(play_, &QToolButton::clicked, clock_, &PlaybackClock::toggle);
    connect(speed_, &QComboBox::currentIndexChanged, this,
            [this](int i) { clock_->setSpeed(speed_->itemData(i).toDouble()); });
    connect(slider_, &QSlider::valueChanged, this, [this](int v) {
        const double span = static_cast<double>(clock_->end() - clock_->begin());
        clock_->setCursor(clock_->begin() + static_cast<std::int64_t>(span * v / kSliderSteps));
    });
    connect(clock_, &PlaybackClock::rangeChanged, this, &PlaybackBar::labelSpeeds);
    connect(clock_, &PlaybackClock::cursorChanged, this, &PlaybackBar::sync);
    connect(clock_, &PlaybackClock::playingChanged, this, &PlaybackBar::sync);
    sync();
}

void PlaybackBar::sync() {
    const bool playing = clock_->isPlaying();
    play_->setIcon(media_icon(playing, palette().color(QPalette::ButtonText), devicePixelRatioF()));
    play_->setText(playing ? tr("Pause") : tr("Play"));
    const double span = std::max(1.0, static_cast<double>(clock_->end() - clock_->begin()));
    {
        const QSignalBlocker block(slider_);
        slider_->setValue(static_cast<int>(std::lround(
            static_cast<double>(clock_->cursor() - clock_->begin()) / span * kSliderSteps)));
    }
    time_->setText(tr("%1 of %2")
                       .arg(duration_text(static_cast<double>(clock_->cursor() - clock_->begin())),
                            duration_text(span)));
}

QString PlaybackBar::rateText(double ns) {
    // The project's one duration format, read as a rate.
    return tr("%1 per second").arg(duration_text(ns));
}

void PlaybackBar::labelSpeeds() {
    // The clock's rate scales with the speed factor each item carries.
    const double at_speed_1 = clock_->traceNsPerSecond() / clock_->speed();
    for (int i = 0; i < speed_->count(); ++i)
        speed_->setItemText(i, rateText(at_speed_1 * speed_->itemData(i).toDouble()));
}

void PlaybackBar::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) sync();
    QWidget::changeEvent(event);
}

}  // namespace pd::vis
