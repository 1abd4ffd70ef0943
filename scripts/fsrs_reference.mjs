// Produces tests/fixtures/fsrs/: two synthetic review histories as revlog.csv and what fsrs-rs
// fits and evaluates on them (tests/app/test_fsrs_optimizer.cpp compares the app's optimizer
// with these figures; CI needs neither Node nor fsrs-rs).
//
//   mkdir -p /tmp/fsrsnode && cd /tmp/fsrsnode && npm install @open-spaced-repetition/binding@0.5.0
//   NODE_PATH=/tmp/fsrsnode/node_modules node scripts/fsrs_reference.mjs tests/fixtures/fsrs
//
// @open-spaced-repetition/binding 0.5.0 is fsrs-rs 6.5.0 (the fsrs crate) through napi-rs.
// Histories are drawn from known FSRS-6 weights (fsrs-rs's memory model; recall at a review a
// day or more after the last is drawn from that model's forgetting curve). Days: UTC, a day
// starting at 04:00 (Anki's default "next day starts at"), delta_t = day(review) - day(last).
// Items as fsrs-rs's convertor builds them: one per review with delta_t > 0, holding the card's
// reviews up to it, in the order of those reviews' times (which fsrs-rs's recency weights use).
import { createRequire } from 'node:module';
import { writeFileSync, mkdirSync } from 'node:fs';
const require = createRequire(import.meta.url);
const fsrs = require('@open-spaced-repetition/binding');

const out = process.argv[2] ?? 'tests/fixtures/fsrs';
mkdirSync(out, { recursive: true });

function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DEFAULTS = [0.212, 1.2931, 2.3065, 8.2956, 6.4133, 0.8334, 3.0194, 0.001, 1.8722, 0.1666,
  0.796, 1.4835, 0.0614, 0.2629, 1.6483, 0.6014, 1.8729, 0.5425, 0.0912, 0.0658, 0.1542];
const GENERATOR = DEFAULTS.slice();
Object.assign(GENERATOR, { 0: 0.5, 1: 1.5, 2: 4.0, 3: 12.0, 8: 1.3, 11: 2.2, 20: 0.35 });

const curve = (w, t, s) => Math.pow(1 + (Math.pow(0.9, -1 / w[20]) - 1) * t / s, -w[20]);
const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));
const initD = (w, r) => w[4] - Math.exp(w[5] * (r - 1)) + 1;
function step(w, st, dt, r) {  // fsrs-rs model.rs step()
  if (!st) return { s: w[r - 1], d: clamp(initD(w, r), 1, 10) };
  const S = st.s, D = st.d, R = curve(w, dt, S);
  let s;
  if (dt === 0) {
    const sinc = Math.exp(w[17] * (r - 3 + w[18])) * Math.pow(S, -w[19]);
    s = S * (r >= 2 ? Math.max(sinc, 1) : sinc);
  } else if (r === 1) {
    s = Math.min(w[11] * Math.pow(D, -w[12]) * (Math.pow(S + 1, w[13]) - 1) * Math.exp((1 - R) * w[14]),
      S / Math.exp(w[17] * w[18]));
  } else {
    s = S * (1 + Math.exp(w[8]) * (11 - D) * Math.pow(S, -w[9]) * (Math.exp((1 - R) * w[10]) - 1) *
      (r === 2 ? w[15] : 1) * (r === 4 ? w[16] : 1));
  }
  let d = D + (10 - D) * (-w[6] * (r - 3)) / 9;
  d = clamp(w[7] * (initD(w, 4) - d) + d, 1, 10);
  return { s: clamp(s, 0.001, 36500), d };
}

const DAY = 86400000, START = Date.UTC(2025, 0, 6, 9, 0, 0);
const dayOf = (ms) => Math.floor((ms - 4 * 3600000) / DAY);

// learningSteps: 1m/10m steps (and a 10m relearning step) as Anki's defaults, else every
// review a day or more after the last.
function simulate({ seed, cards, longTermReviews, learningSteps }) {
  const rnd = mulberry32(seed);
  const rows = [];
  const pick = (p) => { const u = rnd(); let c = 0; for (let i = 0; i < 4; ++i) { c += p[i]; if (u < c) return i + 1; } return 4; };
  for (let c = 0; c < cards; ++c) {
    let t = START + Math.floor(c / 40) * DAY + (c % 40) * 5 * 60000;
    let st = null, lastDay = null;
    const review = (r, state) => {
      const d = dayOf(t);
      st = step(GENERATOR, st, lastDay === null ? 0 : d - lastDay, r);
      rows.push({ card: c, t, r, state });
      lastDay = d;
    };
    // First sight, then same-day learning steps until graduation.
    let r = pick([0.2, 0.1, 0.55, 0.15]);
    review(r, 0);
    if (learningSteps) {
      let stepIdx = r === 3 ? 1 : 0, graduated = r === 4;
      while (!graduated) {
        t += (r === 1 ? 1 : r === 2 ? (stepIdx === 0 ? 5.5 : 10) : 10) * 60000;
        r = pick([0.1, 0.1, 0.75, 0.05]);
        review(r, 1);
        if (r === 4 || (r === 3 && stepIdx === 1)) graduated = true;
        else if (r === 3) stepIdx = 1;
        else if (r === 1) stepIdx = 0;
      }
    }
    for (let k = 0; k < longTermReviews; ++k) {
      const ivl = Math.max(1, Math.round(st.s * (0.4 + 1.4 * rnd())));
      t += ivl * DAY + Math.floor((rnd() - 0.5) * 4 * 3600000);
      const recall = curve(GENERATOR, dayOf(t) - lastDay, st.s);
      r = rnd() >= recall ? 1 : pick([0, 0.12, 0.78, 0.1]);
      review(r, 2);
      if (r === 1 && learningSteps) { t += 10 * 60000; review(3, 3); }
    }
  }
  rows.sort((a, b) => a.t - b.t || a.card - b.card);
  return rows;
}

function items(rows) {
  const byCard = new Map();
  for (const row of rows) { if (!byCard.has(row.card)) byCard.set(row.card, []); byCard.get(row.card).push(row); }
  const list = [];
  for (const h of byCard.values()) {
    h.sort((a, b) => a.t - b.t);
    const reviews = [];
    for (let i = 0; i < h.length; ++i) {
      const dt = i === 0 ? 0 : Math.max(0, dayOf(h[i].t) - dayOf(h[i - 1].t));
      reviews.push({ rating: h[i].r, deltaT: dt });
      if (i > 0 && dt > 0) list.push({ t: h[i].t, card: h[i].card, reviews: reviews.slice() });
    }
  }
  list.sort((a, b) => a.t - b.t || a.card - b.card);
  return list.map((x) => new fsrs.FSRSBindingItem(x.reviews.map((r) => new fsrs.FSRSBindingReview(r.rating, r.deltaT))));
}

const histories = [
  { name: 'steps', seed: 42, cards: 1200, longTermReviews: 5, learningSteps: true },
  { name: 'nosteps', seed: 7, cards: 900, longTermReviews: 6, learningSteps: false },
];
const summary = { fsrs_rs: 'fsrs 6.5.0 via @open-spaced-repetition/binding 0.5.0', day: 'UTC, starts 04:00', generator: GENERATOR, defaults: DEFAULTS, histories: {} };
for (const h of histories) {
  const rows = simulate(h);
  const csv = ['card_id,review_time,review_rating,review_state,review_duration']
    .concat(rows.map((x) => `${x.card + 1},${x.t},${x.r},${x.state},5000`)).join('\n') + '\n';
  writeFileSync(`${out}/${h.name}.revlog.csv`, csv);
  const its = items(rows);
  const params = await fsrs.computeParameters(its, { enableShortTerm: true });
  const ev = (w) => new fsrs.FSRSBinding(w).evaluate(its);
  const fitted = ev(params), defaults = ev(DEFAULTS), generator = ev(GENERATOR);
  summary.histories[h.name] = {
    reviews: rows.length, items: its.length, cards: h.cards, learning_steps: h.learningSteps,
    fitted_weights: params.map((x) => Number(x.toFixed(6))),
    fitted: { log_loss: fitted.logLoss, rmse_bins: fitted.rmseBins },
    defaults: { log_loss: defaults.logLoss, rmse_bins: defaults.rmseBins },
    generator: { log_loss: generator.logLoss, rmse_bins: generator.rmseBins },
  };
  console.log(h.name, rows.length, its.length, params.slice(0, 4), fitted, defaults, generator);
}
writeFileSync(`${out}/fsrs_rs_reference.json`, JSON.stringify(summary, null, 1) + '\n');
