#!/usr/bin/env python3
"""Structural checker for ParallelDeck deck files (authoring helper, standard library only).

Usage:
    python3 validate_deck.py [--lenient] DECK.json [DECK.json ...]

With no file arguments it checks every *.json file next to this script.

It checks the rules documented in README.md in this folder: the top-level fields, every card
(id, prompt, type, options, difficulty, tags, scenario, scenario_note) and every scenario
setting, then the deck-wide rules (unique ids, at least 5 cards per concept tag that the deck
uses, scenarios on at least 75% of cards). On success it prints "OK N cards" for each deck and
exits 0; otherwise it prints one line per problem and exits 1.

--lenient turns the deck-wide rules into warnings, for drafts and small decks.

The C++ application has its own validator. This script is a quick check for authors and must
stay in step with README.md.
"""
import json
import math
import os
import re
import sys

FORMAT = "paralleldeck-deck"
VERSION = 1

TOP_KEYS = {"format", "version", "id", "title", "description", "cards"}
TOP_REQUIRED = {"format", "version", "id", "title", "cards"}
CARD_KEYS = {"id", "prompt", "type", "options", "difficulty", "tags", "scenario", "scenario_note"}
CARD_REQUIRED = {"id", "prompt", "type", "options", "difficulty", "tags"}
OPTION_KEYS = {"text", "correct", "explanation"}

CARD_TYPES = {"single", "multiple"}
DIFFICULTIES = ("foundation", "application", "expert")

CONCEPTS = (
    "why-model-parallelism",
    "data-parallelism",
    "gradient-sync",
    "pipeline-parallelism",
    "tensor-parallelism",
    "sharded-data-parallelism",
    "memory-savers",
    "strategy-and-hardware",
    "framework-apis",
)
TAG_NAMESPACES = {"concept", "topic", "style", "framework", "platform"}

STRATEGIES = {"single", "dp", "ps", "pipeline", "tp", "zero1", "zero2", "zero3", "hybrid"}
CLOCKS = {"wall", "device", "auto"}
SCHEDULES = {"gpipe", "1f1b", "interleaved"}
OPTIMIZERS = {"sgd", "adamw"}
SCENARIO_KEYS = {
    "strategy", "devices", "layers", "width", "batch", "steps", "seed", "optimizer", "lr",
    "bucket_bytes", "no_overlap", "capacity", "clock", "link_latency_us", "link_gbps",
    "schedule", "microbatches", "chunks", "dp", "pp", "tp",
}
# Hard engine limits and the stricter "keep it laptop-sized" limits authors must respect.
ENGINE_RANGES = {"devices": (1, 8), "layers": (1, 16), "width": (16, 512), "steps": (1, 20)}
LAPTOP_MAX = {"width": 256, "layers": 8, "batch": 64}
RECOMMENDED_STEPS = (2, 6)

ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TAG_RE = re.compile(r"^([a-z0-9]+(?:-[a-z0-9]+)*)::([a-z0-9]+(?:-[a-z0-9]+)*)$")
CAPACITY_RE = re.compile(r"^[1-9][0-9]*(?:B|KiB|MiB|GiB)$")
CHOOSE_RE = re.compile(r"\(Choose (two|three|four|five|[2-5])\.\)")
CHOOSE_ANY_RE = re.compile(r"\(\s*choose\b", re.IGNORECASE)
WORD_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5}
MIN_EXPLANATION_CHARS = 40
MIN_SCENARIO_SHARE = 0.75
MIN_CARDS_PER_CONCEPT = 5


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKey("duplicate key %r" % key)
        obj[key] = value
    return obj


def _reject_constant(name):
    raise ValueError("non-standard JSON constant %s" % name)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(float(v)))


def nonempty_str(v):
    return isinstance(v, str) and v.strip() != ""


class Checker:
    def __init__(self, path, lenient):
        self.path = path
        self.lenient = lenient
        self.errors = []
        self.warnings = []

    def err(self, where, msg):
        self.errors.append("%s: %s: %s" % (self.path, where, msg))

    def warn(self, where, msg):
        self.warnings.append("%s: %s: warning: %s" % (self.path, where, msg))

    def deck_rule(self, where, msg):
        (self.warn if self.lenient else self.err)(where, msg)

    # ------------------------------------------------------------------ deck
    def check(self):
        try:
            with open(self.path, "r", encoding="utf-8") as fh:
                deck = json.load(fh, object_pairs_hook=_no_duplicates,
                                 parse_constant=_reject_constant)
        except (OSError, ValueError) as exc:  # JSONDecodeError and DuplicateKey are ValueErrors
            self.err("file", "cannot read deck: %s" % exc)
            return 0
        if not isinstance(deck, dict):
            self.err("deck", "top level must be a JSON object")
            return 0

        for key in sorted(set(deck) - TOP_KEYS):
            self.err("deck", "unknown key %r" % key)
        for key in sorted(TOP_REQUIRED - set(deck)):
            self.err("deck", "missing required key %r" % key)
        if "format" in deck and deck["format"] != FORMAT:
            self.err("deck", "format must be %r" % FORMAT)
        if "version" in deck and not (is_int(deck["version"]) and deck["version"] == VERSION):
            self.err("deck", "version must be the integer %d" % VERSION)
        if "id" in deck and not (isinstance(deck["id"], str) and ID_RE.match(deck["id"])):
            self.err("deck", "id must be lowercase kebab-case")
        if "title" in deck and not nonempty_str(deck["title"]):
            self.err("deck", "title must be a non-empty string")
        if "description" in deck and not isinstance(deck["description"], str):
            self.err("deck", "description must be a string")

        cards = deck.get("cards")
        if not isinstance(cards, list) or not cards:
            self.err("deck", "cards must be a non-empty array")
            return 0

        seen = {}
        concept_counts = {c: 0 for c in CONCEPTS}
        with_scenario = 0
        for index, card in enumerate(cards):
            where = "cards[%d]" % index
            if isinstance(card, dict) and isinstance(card.get("id"), str):
                where += " (%s)" % card["id"]
                if card["id"] in seen:
                    self.err(where, "duplicate id, first used by cards[%d]" % seen[card["id"]])
                else:
                    seen[card["id"]] = index
            self.check_card(where, card)
            if isinstance(card, dict):
                if isinstance(card.get("scenario"), dict):
                    with_scenario += 1
                for tag in card.get("tags", []) if isinstance(card.get("tags"), list) else []:
                    if isinstance(tag, str) and tag.startswith("concept::"):
                        name = tag[len("concept::"):]
                        if name in concept_counts:
                            concept_counts[name] += 1

        for name, count in concept_counts.items():
            if 0 < count < MIN_CARDS_PER_CONCEPT:
                self.deck_rule("deck", "concept::%s is on %d card(s); each concept the deck uses "
                                       "needs at least %d" % (name, count, MIN_CARDS_PER_CONCEPT))
        share = with_scenario / len(cards)
        if share < MIN_SCENARIO_SHARE:
            self.deck_rule("deck", "only %d of %d cards (%.0f%%) have a scenario; at least %.0f%% "
                                   "must" % (with_scenario, len(cards), 100 * share,
                                             100 * MIN_SCENARIO_SHARE))
        return len(cards)

    # ------------------------------------------------------------------ card
    def check_card(self, where, card):
        if not isinstance(card, dict):
            self.err(where, "card must be a JSON object")
            return
        for key in sorted(set(card) - CARD_KEYS):
            self.err(where, "unknown key %r" % key)
        for key in sorted(CARD_REQUIRED - set(card)):
            self.err(where, "missing required key %r" % key)

        if "id" in card and not (isinstance(card["id"], str) and ID_RE.match(card["id"])):
            self.err(where, "id must be lowercase kebab-case ([a-z0-9] words joined by '-')")
        prompt = card.get("prompt")
        if "prompt" in card and not nonempty_str(prompt):
            self.err(where, "prompt must be a non-empty string")
            prompt = None
        ctype = card.get("type")
        if "type" in card and ctype not in CARD_TYPES:
            self.err(where, "type must be one of %s" % sorted(CARD_TYPES))
            ctype = None
        if "difficulty" in card and card["difficulty"] not in DIFFICULTIES:
            self.err(where, "difficulty must be one of %s" % list(DIFFICULTIES))

        self.check_options(where, card.get("options"), ctype, prompt)
        if "tags" in card:
            self.check_tags(where, card["tags"])

        has_scenario = "scenario" in card
        if has_scenario:
            self.check_scenario(where + ".scenario", card["scenario"])
            note = card.get("scenario_note")
            if not nonempty_str(note):
                self.err(where, "scenario_note is required (non-empty string) when scenario is present")
            elif "\n" in note or "\r" in note:
                self.err(where, "scenario_note must be a single line")
        elif "scenario_note" in card:
            self.err(where, "scenario_note without a scenario")

    def check_options(self, where, options, ctype, prompt):
        if options is None:
            return
        if not isinstance(options, list):
            self.err(where, "options must be an array")
            return
        if not 3 <= len(options) <= 6:
            self.err(where, "options must have 3 to 6 entries (has %d)" % len(options))
        texts = set()
        correct = 0
        for i, opt in enumerate(options):
            ow = "%s.options[%d]" % (where, i)
            if not isinstance(opt, dict):
                self.err(ow, "option must be a JSON object")
                continue
            for key in sorted(set(opt) - OPTION_KEYS):
                self.err(ow, "unknown key %r" % key)
            for key in sorted(OPTION_KEYS - set(opt)):
                self.err(ow, "missing required key %r" % key)
            text = opt.get("text")
            if "text" in opt:
                if not nonempty_str(text):
                    self.err(ow, "text must be a non-empty string")
                else:
                    norm = " ".join(text.split()).lower()
                    if norm in texts:
                        self.err(ow, "duplicate option text")
                    texts.add(norm)
            if "correct" in opt:
                if not isinstance(opt["correct"], bool):
                    self.err(ow, "correct must be true or false")
                elif opt["correct"]:
                    correct += 1
            if "explanation" in opt:
                expl = opt["explanation"]
                if not nonempty_str(expl):
                    self.err(ow, "explanation must be a non-empty string")
                elif len(expl.strip()) < MIN_EXPLANATION_CHARS:
                    self.err(ow, "explanation is too short (%d chars, minimum %d): say why this option "
                                 "is right or wrong" % (len(expl.strip()), MIN_EXPLANATION_CHARS))

        if ctype == "single":
            if correct != 1:
                self.err(where, "type 'single' needs exactly one correct option (has %d)" % correct)
            if prompt and CHOOSE_ANY_RE.search(prompt):
                self.err(where, "a 'single' prompt must not contain a '(Choose N.)' instruction")
        elif ctype == "multiple":
            if correct < 2:
                self.err(where, "type 'multiple' needs at least two correct options (has %d)" % correct)
            if correct >= len(options):
                self.err(where, "type 'multiple' needs at least one incorrect option")
            if prompt:
                found = CHOOSE_RE.findall(prompt)
                if len(found) != 1 or len(CHOOSE_ANY_RE.findall(prompt)) != 1:
                    self.err(where, "a 'multiple' prompt must contain exactly one '(Choose N.)', "
                                    "N written as two..five or 2..5")
                else:
                    word = found[0]
                    stated = WORD_COUNTS.get(word, None) or int(word)
                    if stated != correct:
                        self.err(where, "prompt says choose %d but %d options are correct"
                                        % (stated, correct))

    def check_tags(self, where, tags):
        if not isinstance(tags, list) or not tags:
            self.err(where, "tags must be a non-empty array of strings")
            return
        seen = set()
        concepts = 0
        for tag in tags:
            if not isinstance(tag, str):
                self.err(where, "tag %r is not a string" % (tag,))
                continue
            if tag in seen:
                self.err(where, "duplicate tag %r" % tag)
            seen.add(tag)
            m = TAG_RE.match(tag)
            if not m:
                self.err(where, "tag %r must look like namespace::kebab-name" % tag)
                continue
            ns, name = m.groups()
            if ns not in TAG_NAMESPACES:
                self.err(where, "tag %r uses unknown namespace %r (allowed: %s)"
                                % (tag, ns, ", ".join(sorted(TAG_NAMESPACES))))
            if ns == "concept":
                concepts += 1
                if name not in CONCEPTS:
                    self.err(where, "unknown concept tag %r" % tag)
        if concepts == 0:
            self.err(where, "at least one concept:: tag is required")

    # ------------------------------------------------------------------ scenario
    def check_scenario(self, where, sc):
        if not isinstance(sc, dict):
            self.err(where, "scenario must be a JSON object")
            return
        for key in sorted(set(sc) - SCENARIO_KEYS):
            self.err(where, "unknown key %r" % key)
        strategy = sc.get("strategy")
        if strategy not in STRATEGIES:
            self.err(where, "strategy is required and must be one of %s" % sorted(STRATEGIES))
            strategy = None
        devices = sc.get("devices")
        if "devices" not in sc:
            self.err(where, "devices is required")

        # types and ranges
        for key in ("devices", "layers", "width", "batch", "steps", "seed", "bucket_bytes",
                    "microbatches", "chunks", "dp", "pp", "tp"):
            if key in sc and not is_int(sc[key]):
                self.err(where, "%s must be an integer" % key)
        for key, (lo, hi) in ENGINE_RANGES.items():
            if is_int(sc.get(key)) and not lo <= sc[key] <= hi:
                self.err(where, "%s must be in %d..%d" % (key, lo, hi))
        for key in ("batch", "bucket_bytes", "microbatches", "chunks", "dp", "pp", "tp"):
            if is_int(sc.get(key)) and sc[key] < 1:
                self.err(where, "%s must be at least 1" % key)
        for key, hi in LAPTOP_MAX.items():
            if is_int(sc.get(key)) and sc[key] > hi:
                self.err(where, "%s %d is above the laptop-sized limit %d" % (key, sc[key], hi))
        if is_int(sc.get("steps")) and not RECOMMENDED_STEPS[0] <= sc["steps"] <= RECOMMENDED_STEPS[1]:
            self.warn(where, "steps %d is outside the recommended %d..%d"
                             % (sc["steps"], RECOMMENDED_STEPS[0], RECOMMENDED_STEPS[1]))
        if "optimizer" in sc and sc["optimizer"] not in OPTIMIZERS:
            self.err(where, "optimizer must be one of %s" % sorted(OPTIMIZERS))
        if "lr" in sc and not (is_number(sc["lr"]) and sc["lr"] > 0):
            self.err(where, "lr must be a positive number")
        for key in ("link_latency_us", "link_gbps"):
            if key in sc and not (is_number(sc[key]) and sc[key] > 0):
                self.err(where, "%s must be a positive number" % key)
        if "no_overlap" in sc and not isinstance(sc["no_overlap"], bool):
            self.err(where, "no_overlap must be true or false")
        if "capacity" in sc and not (isinstance(sc["capacity"], str) and CAPACITY_RE.match(sc["capacity"])):
            self.err(where, "capacity must be a string like '64MiB' (units B, KiB, MiB, GiB)")
        if "clock" in sc and sc["clock"] not in CLOCKS:
            self.err(where, "clock must be one of %s" % sorted(CLOCKS))
        if "schedule" in sc and sc["schedule"] not in SCHEDULES:
            self.err(where, "schedule must be one of %s" % sorted(SCHEDULES))

        if strategy is None or not is_int(devices):
            return
        layers, width, batch = sc.get("layers"), sc.get("width"), sc.get("batch")
        layers = layers if is_int(layers) else None
        width = width if is_int(width) else None
        batch = batch if is_int(batch) else None
        mb = sc.get("microbatches") if is_int(sc.get("microbatches")) else None
        chunks = sc.get("chunks") if is_int(sc.get("chunks")) else None
        schedule = sc.get("schedule")

        # keys that only make sense for some strategies
        if strategy != "dp":
            for key in ("bucket_bytes", "no_overlap"):
                if key in sc:
                    self.err(where, "%s applies only to strategy 'dp'" % key)
        if strategy not in ("pipeline", "hybrid"):
            for key in ("schedule", "microbatches", "chunks"):
                if key in sc:
                    self.err(where, "%s applies only to strategies 'pipeline' and 'hybrid'" % key)
        if strategy != "hybrid":
            for key in ("dp", "pp", "tp"):
                if key in sc:
                    self.err(where, "%s applies only to strategy 'hybrid'" % key)
        if "chunks" in sc and schedule != "interleaved":
            self.err(where, "chunks applies only to schedule 'interleaved'")

        # data-parallel replicas must divide the batch
        replicas = {"single": 1, "dp": devices, "ps": devices - 1, "pipeline": 1, "tp": 1,
                    "zero1": devices, "zero2": devices, "zero3": devices}.get(strategy)

        if strategy == "single" and devices != 1:
            self.err(where, "strategy 'single' needs devices 1")
        if strategy in ("dp", "tp", "pipeline", "zero1", "zero2", "zero3") and devices < 2:
            self.warn(where, "strategy %r with 1 device shows nothing distributed" % strategy)
        if strategy == "ps" and devices < 2:
            self.err(where, "strategy 'ps' needs at least 2 devices (device 0 is the server)")
        if strategy == "pipeline":
            self.check_pipeline(where, devices, layers, batch, mb, chunks, schedule, 1)
        if strategy == "tp" and width is not None and (width * 4) % devices != 0:
            self.err(where, "tp needs width*4 (%d) divisible by devices (%d)" % (width * 4, devices))
        if strategy == "hybrid":
            dims = [sc.get(k) for k in ("dp", "pp", "tp")]
            if not all(is_int(d) and d >= 1 for d in dims):
                self.err(where, "hybrid needs integer dp, pp and tp (each >= 1)")
                return
            dp, pp, tp = dims
            if dp * pp * tp != devices:
                self.err(where, "hybrid needs dp*pp*tp (%d) == devices (%d)" % (dp * pp * tp, devices))
            if tp > 1 and width is not None and (width * 4) % tp != 0:
                self.err(where, "hybrid tp needs width*4 (%d) divisible by tp (%d)" % (width * 4, tp))
            if pp > 1:
                self.check_pipeline(where, pp, layers, batch, mb, chunks, schedule, dp)
            elif any(k in sc for k in ("schedule", "microbatches", "chunks")):
                self.err(where, "schedule/microbatches/chunks need pp > 1")
            replicas = dp
        if replicas and batch is not None and batch % replicas != 0:
            self.err(where, "batch %d is not divisible by the %d data-parallel replica(s)"
                            % (batch, replicas))

    def check_pipeline(self, where, stages, layers, batch, mb, chunks, schedule, replicas):
        if layers is not None and layers < stages:
            self.err(where, "pipeline needs layers (%d) >= stages (%d)" % (layers, stages))
        if mb is not None and batch is not None and batch % (replicas * mb) != 0:
            self.err(where, "batch %d is not divisible by microbatches %d%s"
                            % (batch, mb, "" if replicas == 1 else " x dp %d" % replicas))
        if schedule == "interleaved":
            if chunks is None or chunks < 2:
                self.err(where, "schedule 'interleaved' needs chunks >= 2")
                return
            if mb is None or mb % stages != 0:
                self.err(where, "interleaved needs microbatches to be a multiple of the stages (%d)"
                                % stages)
            if layers is not None and layers % (stages * chunks) != 0:
                self.err(where, "interleaved needs layers (%d) divisible by stages*chunks (%d)"
                                % (layers, stages * chunks))


def main(argv):
    args = [a for a in argv[1:] if a != "--lenient"]
    lenient = "--lenient" in argv[1:]
    if any(a.startswith("-") for a in args):
        print(__doc__.strip())
        return 2
    if not args:
        here = os.path.dirname(os.path.abspath(__file__))
        args = sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith(".json"))
        if not args:
            print("no deck files found")
            return 1
    status = 0
    for path in args:
        checker = Checker(path, lenient)
        count = checker.check()
        for line in checker.warnings:
            print(line, file=sys.stderr)
        if checker.errors:
            for line in checker.errors:
                print(line)
            print("FAILED %s: %d problem(s)" % (path, len(checker.errors)))
            status = 1
        else:
            print("OK %d cards" % count + ("" if len(args) == 1 else " (%s)" % path))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
