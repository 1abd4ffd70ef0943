#pragma once

#include <QMainWindow>

namespace pd::ui {

// The application window. Until the study pages land it introduces the app and says how to
// run the engine from the command line; nothing here pretends to be a finished feature.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

private:
    void show_about();
};

}  // namespace pd::ui
