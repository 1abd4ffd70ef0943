// A deck as an Anki deck package (.apkg) in the legacy layout every Anki 2.1 reads: a zip of
// `collection.anki2` (SQLite, schema 11: col, notes, cards, revlog, graves) and `media` ("{}").
//
// One note type, "ParallelDeck multiple choice", fields Question, Options, Answer,
// Explanations, Sources, CardId; one card per note, new, in deck order. Deck text is plain and
// is HTML-escaped; options are a lettered list, the answer names the correct letter(s), the
// explanations follow per option. Tags are kept ("concept::x" is Anki's hierarchy too).
// Cards that are neither single nor multiple choice (numeric "predict, then run" cards, and any
// later kind) are exported too, with their prompt and a back that says the answer is measured
// by a run in ParallelDeck (with the textbook value where the card has one): a deck exports
// whole. Note guids are stable per (deck id, card id), so re-importing an updated deck updates
// its notes in Anki instead of duplicating them. No review history is written.
#pragma once

#include <QString>

#include "deck.h"

namespace pd::study {

inline constexpr auto kApkgNoteTypeName = "ParallelDeck multiple choice";

// Writes the package to `path` atomically: on failure the target is untouched (no partial
// file) and `error`, when given, names the file and what failed.
bool exportApkg(const Deck& deck, const QString& path, QString* error);

}  // namespace pd::study
