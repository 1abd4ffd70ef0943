#include "card_table_model.h"

#include "theme.h"

namespace pd::ui {

CardTableModel::CardTableModel(AppContext& context, QObject* parent)
    : QAbstractTableModel(parent), context_(context) {
    reload();
}

void CardTableModel::reload() {
    beginResetModel();
    rows_.clear();
    now_ = context_.now();
    if (context_.library && context_.store) {
        for (const study::Deck& copy : context_.library->decks()) {
            // decks() is rebuilt on changes; rows keep the library's own, lasting deck.
            const study::Deck& deck = *context_.library->deck(copy.id);
            const QHash<QString, study::CardSchedule> schedules =
                context_.store->schedules(deck.id);
            for (const study::Card& card : deck.cards) {
                Row row{&deck, &card, std::nullopt, {}};
                if (const auto it = schedules.find(card.id); it != schedules.end())
                    row.schedule = *it;
                QStringList parts = {card.prompt, card.id};
                for (const study::Option& o : card.options) parts << o.text << o.explanation;
                row.search = parts.join(QLatin1Char('\n'));
                rows_.append(row);
            }
        }
    }
    endResetModel();
}

int CardTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CardTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CardTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case PromptColumn:
            return tr("Question");
        case ConceptColumn:
            return tr("Concept");
        case DifficultyColumn:
            return tr("Difficulty");
        case DueColumn:
            return tr("Due");
        case DeckColumn:
            return tr("Deck");
        case IdColumn:
            return tr("Card id");
        default:
            return {};
    }
}

QVariant CardTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& row = rows_[index.row()];
    const study::Card& card = *row.card;
    const DueState state = !row.schedule ? DueState::New
                           : study::toDateTime(row.schedule->fsrs.due) <= now_
                               ? DueState::Due
                               : DueState::Scheduled;
    switch (role) {
        case DeckIdRole:
            return row.deck->id;
        case CardIdRole:
            return card.id;
        case TagsRole:
            return card.tags;
        case DifficultyRole:
            return static_cast<int>(card.difficulty);
        case DueStateRole:
            return static_cast<int>(state);
        case SearchTextRole:
            return row.search;
        default:
            break;
    }
    if (role == Qt::DisplayRole || role == SortRole || role == Qt::ToolTipRole) {
        switch (index.column()) {
            case PromptColumn:
                return card.prompt;
            case ConceptColumn: {
                QStringList names;
                for (const QString& c : card.concepts()) names.append(study::tagDisplayName(c));
                return names.join(QStringLiteral(", "));
            }
            case DifficultyColumn:
                if (role == SortRole) return static_cast<int>(card.difficulty);
                return study::difficultyDisplayName(card.difficulty);
            case DueColumn: {
                if (role == SortRole)
                    return row.schedule
                               ? study::toDateTime(row.schedule->fsrs.due).toMSecsSinceEpoch()
                               : std::numeric_limits<qint64>::max();
                if (state == DueState::New) return tr("New");
                if (state == DueState::Due) return tr("Due now");
                const QDateTime due = study::toDateTime(row.schedule->fsrs.due);
                return tr("in %1").arg(study::formatInterval(now_.secsTo(due)));
            }
            case DeckColumn:
                return row.deck->title;
            case IdColumn:
                return card.id;
            default:
                return {};
        }
    }
    if (role == Qt::ForegroundRole && index.column() == DueColumn && state == DueState::Due)
        return themeColors().accent;
    return {};
}

QStringList searchWords(const QString& text) {
    return text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

void CardFilterModel::setSearchText(const QString& text) {
    words_ = searchWords(text);
    invalidateFilter();
}
void CardFilterModel::setTag(const QString& tag) {
    tag_ = tag;
    invalidateFilter();
}
void CardFilterModel::setDifficulty(int difficulty) {
    difficulty_ = difficulty;
    invalidateFilter();
}
void CardFilterModel::setDueState(int state) {
    dueState_ = state;
    invalidateFilter();
}

bool CardFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
    if (!tag_.isEmpty() && !index.data(CardTableModel::TagsRole).toStringList().contains(tag_))
        return false;
    if (difficulty_ >= 0 && index.data(CardTableModel::DifficultyRole).toInt() != difficulty_)
        return false;
    if (dueState_ >= 0 && index.data(CardTableModel::DueStateRole).toInt() != dueState_)
        return false;
    const QString text = index.data(CardTableModel::SearchTextRole).toString();
    for (const QString& w : words_) {
        if (!text.contains(w, Qt::CaseInsensitive)) return false;
    }
    return true;
}

}  // namespace pd::ui
