// A headless report of what the Show me window shows of a card's claims: the window laid out
// offscreen at a given size runs the card as it does on screen, then chooses each claim in
// turn and records its text, measured value, verdict and where its evidence came into view.
// `paralleldeck --show-me ID --claims-json FILE --window-size WxH` writes it; tests read it.
#pragma once

#include <QJsonObject>
#include <QSize>
#include <QString>

#include "pd/expectations.h"
#include "pd/run_config.h"

namespace pd::ui {

class ShowMeWindow;

struct ClaimsReportRequest {
    QString card_id;
    QString title;
    QString note;
    pd::RunConfig config;
    pd::Expectations expectations;
    QSize window_size{1280, 720};
};

// Runs the card in `window` (shown at the requested size) and waits for its claims. Returns
// false with `error` when the run or its comparison runs could not be made. The JSON:
// {"card", "window": {"width", "height"}, "claims": [{"text", "checked_as", "measured",
// "passed", "timed", "spread", "evidence": {"x", "y", "width", "height"}, "evidence_inside"}]}.
bool claimsReport(ShowMeWindow& window, const ClaimsReportRequest& request, QJsonObject* report,
                  QString* error);

// "1280x720" -> QSize; invalid on anything else.
QSize parseWindowSize(const QString& text);

}  // namespace pd::ui
