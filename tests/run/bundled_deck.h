// Every card of the bundled decks once (a card shared by two decks is the same card), or of
// the deck file PD_CHECK_DECK names (for authors tuning a card). For tests that go through
// every bundled scenario; the including target defines PD_DECK_DIR.
#pragma once

#include <QDir>
#include <QString>
#include <QStringList>

#include "study/bundled_decks.h"
#include "study/deck.h"

inline const pd::study::Deck& bundledDeck() {
    static const pd::study::Deck deck = [] {
        const QString other = qEnvironmentVariable("PD_CHECK_DECK");
        QStringList files;
        if (!other.isEmpty())
            files << other;
        else
            for (const QString& f : pd::study::bundledDeckFiles())
                files << QDir(QStringLiteral(PD_DECK_DIR)).filePath(f);
        pd::study::Deck all;
        for (const QString& file : files) {
            const auto loaded = pd::study::loadDeckFile(file);
            if (!loaded.deck)
                qFatal("a bundled deck does not load:\n%s", qPrintable(loaded.errorText()));
            for (const pd::study::Card& card : loaded.deck->cards)
                if (!all.card(card.id)) all.cards.append(card);
        }
        return all;
    }();
    return deck;
}
