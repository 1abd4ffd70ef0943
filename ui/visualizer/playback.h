// Playback of a run: a cursor that sweeps the timeline at 0.25x-8x, with play, pause and a
// scrub slider. Speeds are labelled by what they play: the run's time per real second. The clock is
// plain logic (advance() by elapsed real time) so tests drive it without timers; the bar is its
// widget.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <QWidget>
#include <cstdint>

class QComboBox;
class QLabel;
class QSlider;
class QToolButton;

namespace pd::vis {

class PlaybackClock : public QObject {
    Q_OBJECT

  public:
    // At 1x one training step plays in this many seconds, whatever its real length: runs of
    // microseconds and of seconds both play at a pace a learner can follow.
    static constexpr double kSecondsPerStepAt1x = 4.0;

    explicit PlaybackClock(QObject* parent = nullptr);

    // The display-time range to sweep and how much trace time one step takes.
    void setRange(std::int64_t begin_ns, std::int64_t end_ns, double step_ns);
    std::int64_t begin() const { return begin_; }
    std::int64_t end() const { return end_; }
    std::int64_t cursor() const { return cursor_; }
    double speed() const { return speed_; }
    bool isPlaying() const { return playing_; }
    // Trace nanoseconds that pass per real second at the current speed.
    double traceNsPerSecond() const;

  public slots:
    void play();
    void pause();
    void toggle();
    void setSpeed(double speed);  // clamped to [0.25, 8]
    void setCursor(std::int64_t display_ns);
    // Moves the cursor by `real_ms` of real time; stops at the end.
    void advance(double real_ms);

  signals:
    void cursorChanged(std::int64_t display_ns);
    void playingChanged(bool playing);
    void rangeChanged();

  private:
    void tick();

    std::int64_t begin_ = 0, end_ = 0, cursor_ = 0;
    double step_ns_ = 1e6;
    double speed_ = 1.0;
    bool playing_ = false;
    QTimer timer_;
    QElapsedTimer elapsed_;
};

class PlaybackBar : public QWidget {
    Q_OBJECT

  public:
    explicit PlaybackBar(PlaybackClock* clock, QWidget* parent = nullptr);
    QToolButton* playButton() const { return play_; }
    QSlider* slider() const { return slider_; }
    QComboBox* speedBox() const { return speed_; }

    // "250 µs per second": how much of the run one real second plays.
    static QString rateText(double trace_ns_per_second);

  protected:
    void changeEvent(QEvent* event) override;

  private:
    void sync();
    void labelSpeeds();

    PlaybackClock* clock_;
    QToolButton* play_;
    QComboBox* speed_;
    QSlider* slider_;
    QLabel* time_;
};

}  // namespace pd::vis
