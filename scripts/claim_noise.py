#!/usr/bin/env python3
"""Re-runs cards whose claims compare runs by a figure from clocks, as "Reset to card" does,
and prints how far each such claim's measured value moves over the runs against the bound it
is held to. A claim whose value ever crosses its bound, or whose runs' ranges overlap where the
claim says they differ, is reported. Usage:
    scripts/claim_noise.py [--runs 5] [--app build/app/paralleldeck] [--load] [CARD...]
--load keeps every core busy with a spinning process for the duration (a loaded machine)."""
import argparse, json, multiprocessing, os, subprocess, sys, tempfile


def spin():
    while True:
        pass


def deck_cards(root):
    ids = []
    for name in ("cloud-ml-engineer.json", "ml-systems-parallelism.json"):
        with open(os.path.join(root, "resources", "decks", name)) as f:
            for card in json.load(f)["cards"]:
                if "scenario" in card and card["id"] not in ids:
                    ids.append(card["id"])
    return ids


def report(app, card, path):
    subprocess.run([app, "--show-me", card, "--claims-json", path, "--window-size", "1280x720"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    with open(path) as f:
        return json.load(f)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--app", default=os.path.join(root, "build", "app", "paralleldeck"))
    ap.add_argument("--load", action="store_true")
    ap.add_argument("cards", nargs="*")
    a = ap.parse_args()
    spinners = []
    if a.load:
        for _ in range(os.cpu_count() or 2):
            p = multiprocessing.Process(target=spin, daemon=True)
            p.start()
            spinners.append(p)
    problems = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for card in a.cards or deck_cards(root):
                first = report(a.app, card, os.path.join(tmp, "r.json"))
                timed = [i for i, c in enumerate(first["claims"])
                         if c["timed"] and "compares_with" in c]
                if not timed:
                    continue
                runs = [first] + [report(a.app, card, os.path.join(tmp, "r.json"))
                                  for _ in range(a.runs - 1)]
                for i in timed:
                    values = [float(r["claims"][i]["measured"].split()[0]) for r in runs]
                    held = sum(r["claims"][i]["passed"] for r in runs)
                    apart = sum(bool(r["claims"][i].get("beyond_spread")) for r in runs)
                    text = runs[0]["claims"][i]["checked_as"]
                    ok = held == len(runs)
                    problems += not ok
                    print(f"{'ok  ' if ok else 'FAIL'} {card:34s} {min(values):7.3f}-{max(values):7.3f}"
                          f"  held {held}/{len(runs)}  apart {apart}/{len(runs)}  {text}")
    finally:
        for p in spinners:
            p.terminate()
    print(f"{problems} claim(s) did not hold on every run")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
