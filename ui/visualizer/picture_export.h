// One picture of one or two runs — the timeline with its memory bars and metrics — painted
// through TimelineView::paint for PNG (2x pixel ratio), SVG and PDF alike. Works headless
// (QT_QPA_PLATFORM=offscreen) once a QApplication exists.
#pragma once

#include <QImage>
#include <QSizeF>
#include <QString>
#include <memory>
#include <optional>
#include <vector>

#include "pd/run.h"
#include "visualizer/time_mapping.h"
#include "visualizer/timeline_palette.h"

class QPainter;

namespace pd::vis {

struct PictureRun {
    pd::RunConfig config;
    std::shared_ptr<const pd::RunResult> result;
};

struct PictureOptions {
    double width = 1600;  // logical pixels; PNG is written at twice this
    ThemeChoice theme = ThemeChoice::light;
    // The time axis shared by every run (display time = trace time - origins[i]). Unset: one
    // training step (step 1 when a run has two or more), as the visualizer opens.
    std::optional<TimeMapping> mapping;
    std::vector<std::int64_t> origins;
    std::optional<std::int64_t> cursor_ns;  // playback cursor (display time); unset: all shown
    // The step in view (TimelineView::View::focus_step); unset with `mapping`: none.
    std::optional<int> focus_step;
    bool memory = true;
    bool metrics = true;
    QString note;  // what to look at, printed above the timeline
};

// Logical size of the picture for these runs.
QSizeF picture_size(const std::vector<PictureRun>& runs, const PictureOptions& options);
// The one painting path of every format.
void paint_picture(QPainter& painter, const std::vector<PictureRun>& runs,
                   const PictureOptions& options);
// The picture as an image at `device_pixel_ratio` (2 for PNG export and the clipboard).
QImage render_picture(const std::vector<PictureRun>& runs, const PictureOptions& options,
                      double device_pixel_ratio = 2.0);

// Writes .png (2x pixel ratio), .svg or .pdf, chosen by the extension of `path` (case does
// not matter). Returns false with a message in *error (if given) when it cannot.
bool export_picture(const QString& path, const std::vector<PictureRun>& runs,
                    const PictureOptions& options, QString* error);
bool export_picture(const QString& path, const pd::RunConfig& config,
                    std::shared_ptr<const pd::RunResult> result, QString* error,
                    const PictureOptions& options = {});

}  // namespace pd::vis
