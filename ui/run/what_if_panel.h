// The scenario's knobs, so a learner can turn GPipe into 1F1B or add devices and see the
// difference. Every change is validated by the engine's own rules; a valid one is offered
// as a new config after a short pause (so dragging a spin box does not start ten runs).
#pragma once

#include <QHash>
#include <QVariantList>
#include <QWidget>
#include <utility>

#include "pd/run_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTimer;

namespace pd::ui {

class WhatIfPanel : public QWidget {
    Q_OBJECT
  public:
    explicit WhatIfPanel(QWidget* parent = nullptr);
    ~WhatIfPanel() override;

    void setConfig(const pd::RunConfig& config);  // shows it as the card's; emits nothing
    // Shows `config` in the knobs (the run on screen after a cancel) without changing what
    // counts as the card's settings; emits nothing.
    void showKnobs(const pd::RunConfig& config);
    pd::RunConfig config() const;  // what the knobs say now
    QString problem() const;       // why the knobs are invalid, or empty
    // Whether any knob now differs from what setConfig() showed (the card's settings).
    bool differsFromCard() const;

    // The knob the problem names, framed in red (null when there is none).
    QWidget* markedKnob() const;

  signals:
    void configChanged(const pd::RunConfig& config);
    // The problem line changed (empty: the knobs are valid again).
    void problemChanged(const QString& problem);

  private:
    void knobChanged();
    void emitIfValid();
    void updateEnabled();
    void showProblem();  // the problem line and the red frame on its knob
    std::pair<QString, QWidget*> problemAndKnob() const;
    QVariantList knobState() const;  // every knob's value, in a fixed order

    pd::RunConfig base_;  // fields the panel does not show are kept from here
    // knobState() right after setConfig(): what "differs from the card" compares with.
    QVariantList card_state_;
    bool updating_ = false;
    QComboBox* strategy_;
    QSpinBox* devices_;
    QComboBox* schedule_;
    QSpinBox* microbatches_;
    QSpinBox* chunks_;
    QSpinBox* dp_;
    QSpinBox* pp_;
    QSpinBox* tp_;
    QSpinBox* layers_;
    QSpinBox* width_;
    QSpinBox* batch_;
    QCheckBox* transformer_;
    QSpinBox* heads_;
    QSpinBox* seq_len_;
    QCheckBox* sequence_parallel_;
    QCheckBox* cp_load_balance_;
    QCheckBox* cp_ulysses_;
    QSpinBox* experts_;
    QSpinBox* top_k_;
    QDoubleSpinBox* capacity_factor_;
    QLineEdit* capacity_;
    QComboBox* clock_;
    QComboBox* backend_;
    QDoubleSpinBox* link_gbps_;
    QCheckBox* overlap_;
    QLineEdit* bucket_;
    QSpinBox* steps_;
    QComboBox* optimizer_;
    QComboBox* recompute_;
    QComboBox* precision_;
    QSpinBox* accumulate_;
    QCheckBox* reduce_every_;
    QCheckBox* async_;
    QSpinBox* staleness_;
    QLabel* problem_;
    QHash<QString, QWidget*> knob_for_key_;      // a config key -> the knob that sets it
    QHash<const QWidget*, QString> knob_label_;  // the knob's label, without its mnemonic
    QString typed_problem_;                      // a spin box was given more than its maximum
    QWidget* typed_knob_ = nullptr;
    QTimer* debounce_;
};

}  // namespace pd::ui
