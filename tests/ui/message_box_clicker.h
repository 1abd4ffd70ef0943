// Answers the next QMessageBox a test triggers: the box runs its own event loop, so the click
// is queued before the action that opens it and runs inside that loop.
#pragma once

#include <QAbstractButton>
#include <QApplication>
#include <QMessageBox>
#include <QTimer>
#include <memory>

namespace pd::test {

struct MessageBoxSeen {
    bool opened = false;
    bool clicked = false;  // a button starting with the requested text was found and clicked
    QString text;          // the box's main text
    QString defaultButton;
};

inline void clickWhenOpen(const std::shared_ptr<MessageBoxSeen>& seen, const QString& buttonText,
                          int triesLeft) {
    QTimer::singleShot(0, qApp, [seen, buttonText, triesLeft] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box) {
            // Not open yet (events ran before the action): look again on the next pass.
            if (triesLeft > 0) clickWhenOpen(seen, buttonText, triesLeft - 1);
            return;
        }
        seen->opened = true;
        seen->text = box->text();
        if (box->defaultButton()) seen->defaultButton = box->defaultButton()->text();
        for (QAbstractButton* b : box->buttons()) {
            if (b->text().remove(QLatin1Char('&')).startsWith(buttonText)) {
                seen->clicked = true;
                b->click();
                return;
            }
        }
        if (box->escapeButton())
            box->escapeButton()->click();
        else
            box->reject();
    });
}

// Clicks the button whose text starts with `buttonText` on the next message box; without one,
// presses the box's escape button so a test never hangs on an unexpected box.
inline std::shared_ptr<MessageBoxSeen> answerNextMessageBox(const QString& buttonText) {
    auto seen = std::make_shared<MessageBoxSeen>();
    clickWhenOpen(seen, buttonText, 100);
    return seen;
}

}  // namespace pd::test
