// The card browser's models: every card of every deck with its schedule, and a filter proxy
// for the search text, tag, difficulty and due state.
#pragma once

#include <QAbstractTableModel>
#include <QDateTime>
#include <QSortFilterProxyModel>

#include "app_context.h"

namespace pd::ui {

enum class DueState { New = 0, Due = 1, Scheduled = 2 };

class CardTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column {
        PromptColumn,
        ConceptColumn,
        DifficultyColumn,
        DueColumn,
        DeckColumn,
        IdColumn,
        ColumnCount
    };
    enum Role {
        DeckIdRole = Qt::UserRole + 1,
        CardIdRole,
        TagsRole,        // QStringList
        DifficultyRole,  // int (study::Difficulty)
        DueStateRole,    // int (DueState)
        SearchTextRole,  // prompt, options and explanations, for the search box
        SortRole,
    };

    explicit CardTableModel(AppContext& context, QObject* parent = nullptr);
    // Re-reads decks and schedules.
    void reload();

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

  private:
    struct Row {
        const study::Deck* deck;
        const study::Card* card;
        std::optional<study::CardSchedule> schedule;
        QString search;
    };
    AppContext& context_;
    QList<Row> rows_;
    QDateTime now_;
};

// The search box's words: every one must occur (case-insensitively) for a card to match.
QStringList searchWords(const QString& text);

class CardFilterModel : public QSortFilterProxyModel {
    Q_OBJECT
  public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    void setSearchText(const QString& text);
    void setTag(const QString& tag);     // empty: any
    void setDifficulty(int difficulty);  // -1: any
    void setDueState(int state);         // -1: any (DueState otherwise)

  protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

  private:
    QStringList words_;
    QString tag_;
    int difficulty_ = -1;
    int dueState_ = -1;
};

}  // namespace pd::ui
