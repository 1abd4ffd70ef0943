#include "claims_report.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QJsonArray>
#include <QRegularExpression>

#include "claims_panel.h"
#include "show_me_window.h"

namespace pd::ui {

QSize parseWindowSize(const QString& text) {
    static const QRegularExpression form(QStringLiteral("^(\\d{3,5})x(\\d{3,5})$"));
    const auto m = form.match(text.trimmed());
    if (!m.hasMatch()) return {};
    return {m.captured(1).toInt(), m.captured(2).toInt()};
}

bool claimsReport(ShowMeWindow& window, const ClaimsReportRequest& request, QJsonObject* report,
                  QString* error) {
    window.placeAt(request.window_size);
    window.show();
    QEventLoop loop;
    QString failure;
    const auto done =
        QObject::connect(&window, &ShowMeWindow::claimsReady, &loop, &QEventLoop::quit);
    const auto failed =
        QObject::connect(&window, &ShowMeWindow::claimsUnavailable, &loop, [&](const QString& why) {
            failure = why;
            loop.quit();
        });
    window.showScenario(request.title, request.note, request.config, request.card_id,
                        request.expectations);
    if (!request.expectations.empty()) loop.exec();
    QObject::disconnect(done);
    QObject::disconnect(failed);
    if (!failure.isEmpty()) {
        if (error) *error = failure;
        return false;
    }
    QCoreApplication::processEvents();

    const QRect inside(QPoint(0, 0), window.size());
    QJsonArray claims;
    ClaimsPanel* panel = window.claimsPanel();
    for (int i = 0; i < panel->count(); ++i) {
        panel->choose(i);
        QCoreApplication::processEvents();
        const pd::ClaimOutcome& o = panel->outcomes()[static_cast<std::size_t>(i)];
        const QRect r = window.evidenceRect();
        QJsonObject claim{
            {QStringLiteral("text"), QString::fromStdString(o.plain)},
            {QStringLiteral("checked_as"), QString::fromStdString(o.description)},
            {QStringLiteral("measured"), QString::fromStdString(o.measured)},
            {QStringLiteral("passed"), o.passed},
            {QStringLiteral("timed"), o.timed},
            {QStringLiteral("evidence"), QJsonObject{{QStringLiteral("x"), r.x()},
                                                     {QStringLiteral("y"), r.y()},
                                                     {QStringLiteral("width"), r.width()},
                                                     {QStringLiteral("height"), r.height()}}},
            {QStringLiteral("evidence_inside"), !r.isEmpty() && inside.contains(r)},
        };
        if (!o.spread.empty()) claim[QStringLiteral("spread")] = QString::fromStdString(o.spread);
        if (o.beyond_spread) claim[QStringLiteral("beyond_spread")] = *o.beyond_spread;
        if (o.variant >= 0) claim[QStringLiteral("compares_with")] = window.comparedVariant();
        claims.append(claim);
    }
    *report = QJsonObject{
        {QStringLiteral("card"), request.card_id},
        {QStringLiteral("window"), QJsonObject{{QStringLiteral("width"), window.width()},
                                               {QStringLiteral("height"), window.height()}}},
        {QStringLiteral("claims"), claims},
    };
    return true;
}

}  // namespace pd::ui
