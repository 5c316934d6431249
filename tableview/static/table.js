// tablectl view: a table's page (/table/<id>), for the pit and the technicians: draws the
// table from what it publishes (docs/mqtt.md): state, board, stats, jackpot, limits,
// alerts, devices/<name>, rounds. Read-only; no library, no build step.
"use strict";

const tables = new Map();
const TABLE_ID = (location.pathname.match(/^\/table\/([^/]+)$/) || [])[1];
const ONLY = TABLE_ID ? decodeURIComponent(TABLE_ID) : null;
const MESSAGES = {
  place_your_bets: "Place your bets", no_more_bets: "No more bets",
  result: "Result", void: "Void", idle: "",
};

function numberClass(n, game) {
  if (game === "fantan") return "fantan";
  return n === 0 ? "green" : RED.has(n) ? "red" : "black";
}

function numberBall(n, game, size) {
  return el("span", { class: `num ${size} ${numberClass(n, game)}` }, n);
}

// -- layouts of lit areas (names of docs/protocols/board.md) -------------------------------
function range(a, b) { const out = []; for (let i = a; i <= b; i++) out.push(i); return out; }
function pairs(n) { const out = []; for (let a = 1; a <= n; a++) for (let b = a + 1; b <= n; b++) out.push([a, b]); return out; }

const SICBO_GROUPS = [
  ["Small · Big · Odd · Even", ["small", "odd", "even", "big"]],
  ["Triples", [...range(1, 6).map((i) => `triple-${i}`), "any-triple"]],
  ["Doubles", range(1, 6).map((i) => `double-${i}`)],
  ["Totals", range(4, 17).map((t) => `total-${t}`)],
  ["Two dice", pairs(6).map(([a, b]) => `combo-${a}-${b}`)],
  ["Singles", range(1, 6).map((i) => `single-${i}`)],
];
const FIGURES = ["fish", "prawn", "gourd", "coin", "crab", "rooster"];
const FPC_GROUPS = [
  ["Small · Big", ["small", "big"]],
  ["Figures", FIGURES],
  ["Colours", ["red", "green", "blue"].flatMap((c) => ["one", "two", "three"].map((w) => `${w}-${c}`)).concat(["any-three-colour"])],
  ["Triples", FIGURES.map((f) => `triple-${f}`).concat(["any-triple"])],
  ["Totals", range(4, 17).map((t) => `total-${t}`)],
];
const FPC_FACE = { 1: "fish", 2: "prawn", 3: "gourd", 4: "coin", 5: "crab", 6: "rooster" };
const DIE = ["", "⚀", "⚁", "⚂", "⚃", "⚄", "⚅"];

function areaLabel(a) {
  return a.replace(/^(single|double|triple|total|combo)-/, "").replace(/-/g, " ");
}

function layoutGrid(groups, lit) {
  const on = new Set(lit || []);
  return el("div", { class: "layout" }, groups.map(([title, names]) => [
    el("h3", {}, title),
    el("div", { class: "areas" }, names.map((a) => el("span", {
      class: on.has(a) ? "area lit" : "area", "data-area": a,
    }, areaLabel(a)))),
  ]));
}

function diceView(outcome, fpc) {
  if (!outcome || !outcome.dice) return el("div", { class: "dice" });
  return el("div", { class: "dice", "data-dice": outcome.dice.join("") }, outcome.dice.map((d) =>
    el("span", {}, DIE[d], fpc ? el("span", { class: "figure" }, FPC_FACE[d]) : null)));
}

function roadsView(roads) {
  if (!roads) return null;
  const c = roads.counts;
  const withTies = roads.big_road.map((m, i) => (i === 0 && roads.leading_ties ? { ...m, ties: m.ties + roads.leading_ties } : m));
  const ask = (side, label) => el("div", { class: "ask", "data-ask": side }, el("b", {}, label),
    askMark(roads.predictions[side].big_eye_boy, "eye"),
    askMark(roads.predictions[side].small_road, "small"),
    askMark(roads.predictions[side].cockroach_pig, "roach"));
  return el("div", { class: "roads", "data-coups": c.coups },
    el("div", {}, el("h3", {}, "Bead plate"), road(roads.bead_plate, "bead", 12)),
    el("div", {}, el("h3", {}, "Big road"), road(withTies, "big", 26)),
    el("div", {}, el("h3", {}, "Big eye boy"), road(roads.big_eye_boy, "eye", 12)),
    el("div", {}, el("h3", {}, "Small road · Cockroach pig"),
      el("div", { class: "row" }, road(roads.small_road, "small", 12), road(roads.cockroach_pig, "roach", 12))),
    el("div", {}, el("h3", {}, `Shoe: ${c.coups} coups`),
      el("div", {}, `Banker ${c.banker} · Player ${c.player} · Tie ${c.tie} · B pair ${c.banker_pair} · P pair ${c.player_pair}`)),
    el("div", {}, el("h3", {}, "Next coup"), ask("B", "Banker ask"), ask("P", "Player ask")),
  );
}

// -- statistics ----------------------------------------------------------------------------
function statsView(stats, game) {
  if (!stats) return null;
  const n = stats.rounds, ch = stats.chances || {};
  const line = (label, count) => el("tr", {}, el("td", {}, label), el("td", { class: "v" }, pct(count, n)),
    el("td", {}, el("span", { class: "bar", style: `width:${n ? (60 * count) / n : 0}px` })));
  const rows = [];
  if (game === "roulette") {
    rows.push(line("Red", ch.red), line("Black", ch.black), line("Zero", ch.zero), line("Odd", ch.odd),
      line("Even", ch.even), line("1–18", ch.low), line("19–36", ch.high));
    (stats.dozens || []).forEach((d, i) => rows.push(line(`Dozen ${i + 1}`, d)));
  } else if (game === "fantan") {
    for (const k of ["1", "2", "3", "4"]) rows.push(line(k, stats.counts[k]));
  } else {
    rows.push(line("Small", ch.small), line("Big", ch.big), line("Odd", ch.odd), line("Even", ch.even),
      line("Triples", stats.triples.any), line("Doubles", stats.doubles));
  }
  const hot = stats.hot ? el("div", {}, el("h3", {}, "Hot"), el("div", { class: "history" }, stats.hot.map((x) => numberBall(x, game, "small"))),
    el("h3", {}, "Cold"), el("div", { class: "history" }, stats.cold.map((x) => numberBall(x, game, "small")))) : null;
  let totals = null;
  if (stats.totals) {
    const max = Math.max(1, ...Object.values(stats.totals));
    totals = el("div", {}, el("h3", {}, "Totals"), el("table", { class: "stats" }, Object.entries(stats.totals).filter(([t]) => t >= 4 && t <= 17).map(([t, v]) =>
      el("tr", {}, el("td", {}, t), el("td", { class: "v" }, v), el("td", {}, el("span", { class: "bar", style: `width:${(60 * v) / max}px` }))))));
  }
  return el("div", { class: "row" },
    el("div", {}, el("h3", {}, `Last ${n} rounds`), el("table", { class: "stats" }, rows)), hot, totals);
}

// -- rounds, devices -----------------------------------------------------------------------
// Each round's money in four columns that add up: staked = returned + won + house.
// "returned" is the stakes handed back (winning, pushed and refunded bets), "won" the
// prizes paid net of commission (payout - commission), "house" the house's net result.
function moneyCols(t) {
  const stakes = t.stakes ?? 0, won = (t.payout ?? 0) - (t.commission ?? 0), house = t.house_net ?? 0;
  return { stakes, returned: stakes - won - house, won, house };
}

function roundsView(rounds) {
  if (!rounds.length) return el("p", { class: "note" }, "No round since the view started.");
  return el("table", { class: "rounds" },
    el("tr", {}, ["#", "result", "dealer", "bets", "staked", "returned", "won", "house"].map((h) => el("th", {}, h))),
    rounds.map((r) => {
      const d = r.minor_digits, m = moneyCols(r.totals || {});
      const payments = !m.stakes && m.won;  // money moved between players (mah-jong): no stakes
      const count = r.bets_count ?? r.bets.length;
      const listed = count > r.bets.length ? ` (first ${r.bets.length} listed)` : "";
      const bets = el("details", {}, el("summary", {}, `${count} bets${listed}`), el("table", { class: "bets" },
        r.bets.map((b) => el("tr", { class: b.result }, el("td", {}, `seat ${b.seat}`), el("td", {}, b.bet_type),
          el("td", {}, b.selection === null ? "" : JSON.stringify(b.selection)), el("td", { class: "m" }, money(b.stake, d)),
          el("td", {}, b.result), el("td", { class: "m" }, money(b.payout, d))))));
      return el("tr", { class: r.status, "data-round": r.round_id },
        el("td", {}, r.seq), el("td", { class: "result" }, r.status === "void" ? `void: ${r.void_reason}` : outcomeLine(r.outcome)),
        el("td", {}, r.dealer || ""), el("td", {}, bets),
        el("td", { class: "m", "data-col": "staked" }, money(m.stakes, d)),
        el("td", { class: "m", "data-col": "returned", title: payments ? "payments between players: no stakes" : "" }, payments ? "–" : money(m.returned, d)),
        el("td", { class: "m", "data-col": "won" }, money(m.won, d)), el("td", { class: "m", "data-col": "house" }, money(m.house, d)));
    }));
}

// A table's witness (docs/witness.md): its disagreement rate and its lag after the primary.
function witnessText(w) {
  if (!w) return "";
  const rate = w.disagreement_rate === null ? "–" : `${(w.disagreement_rate * 100).toFixed(1)} %`;
  return ` – disagreements ${rate}, timeouts ${w.timeouts}, lag ${w.lag_ms === null ? "–" : w.lag_ms + " ms"}`;
}

function devicesView(devices, state) {
  const items = Object.entries(devices).map(([name, d]) => el("span", {
    class: `device ${d.state}`, "data-device": name, "data-state": d.state,
    title: d.message || "",
  }, `${name} (${d.kind || "?"}): ${d.state}${d.code ? " " + d.code : ""}${d.message ? " – " + d.message : ""}${witnessText(d.witness)}`));
  const faults = (state && state.faults) || [];
  return el("div", {},
    el("div", { class: "devices" }, items.length ? items : el("span", { class: "note" }, "no device")),
    faults.length ? el("p", { class: "faults", "data-latched": faults.join(",") }, "Latched: " + faults.join(", ")) : null);
}

// -- one table -----------------------------------------------------------------------------
function tableView(t) {
  const st = t.state || {}, b = t.board, game = st.game || (b && b.game) || "";
  const online = st.availability === "online";
  const message = b ? b.message : "";
  const voidText = b && b.message === "void" ? `: ${b.void_reason}` : "";
  
  const sec = el("section", {
    class: "table", id: `t-${t.table_id}`, "data-table": t.table_id, "data-game": game,
    "data-message": message, "data-round": b ? b.round_id : "", "data-seq": b ? b.seq : "",
  });
  sec.append(el("div", { class: "head" },
    el("h2", {}, t.table_id), el("span", {}, game),
    el("span", { class: `badge ${online ? "on" : "off"}` }, st.availability || "unknown"),
    el("span", { class: "badge" }, `phase ${st.phase || (b && b.phase) || "?"}`),
    el("a", { href: `/board/${encodeURIComponent(t.table_id)}`, class: "boardlink" }, "the players' board")));
  if (b) sec.append(el("div", { class: `message ${message}` }, (MESSAGES[message] || message) + voidText, " ", message === "result" ? outcomeLine(b.outcome) : null));
  if (b && (b.layout === "roulette" || b.layout === "fantan")) {
    sec.append(el("div", { class: "row" },
      b.number === null ? el("span", { class: "note" }, "no number yet") : numberBall(b.number, game, "big"),
      el("div", {}, el("h3", {}, "History"), el("div", { class: "history", "data-history": b.history.join(",") },
        b.history.map((n) => numberBall(n, game, "small"))))));
    if (b.layout === "fantan") sec.append(layoutGrid([["Numbers", ["1", "2", "3", "4"]]], b.lit));
  }
  if (b && (b.layout === "sicbo" || b.layout === "fish-prawn-crab")) {
    sec.append(diceView(b.outcome, b.layout === "fish-prawn-crab"));
    sec.append(layoutGrid(b.layout === "sicbo" ? SICBO_GROUPS : FPC_GROUPS, b.lit));
  }
  if (b && b.layout === "baccarat") {
    sec.append(layoutGrid([["Result", ["banker", "player", "tie", "banker-pair", "player-pair"]]], b.lit));
    sec.append(roadsView(b.roads));
  }
  const sv = statsView(t.stats, game);
  if (sv) sec.append(sv);
  if (t.jackpot) {
    // the meter, always; beside it a hit whose payment is pending (docs/integrity.md)
    sec.append(el("div", {}, el("h3", {}, "Progressive jackpot"),
      el("span", { class: "jackpot", "data-jackpot": t.jackpot.amount }, `${t.jackpot.currency} ${money(t.jackpot.amount, t.jackpot.minor_digits ?? 2)}`)));
    if (t.jackpot.locked) {
      const l = t.jackpot.locked;
      sec.append(el("div", {}, el("h3", {}, "Jackpot hit: payment pending"),
        el("span", { class: "jackpot locked", "data-jackpot-locked": l.amount },
          `${t.jackpot.currency} ${money(l.amount, t.jackpot.minor_digits ?? 2)} (seat ${l.seat ?? "?"}, ${l.hand ?? ""}${l.waiting > 1 ? `; ${l.waiting - 1} more waiting` : ""})`)));
    }
  }
  if (t.alerts && t.alerts.alerts.length) {
    sec.append(el("h3", {}, "Integrity alerts"), el("ul", { class: "alerts", "data-alerts": t.alerts.alerts.length },
      t.alerts.alerts.map((a) => el("li", { class: `alert ${a.severity} ${a.state}`, "data-code": a.code },
        `#${a.id} ${a.code}${a.subject ? " " + a.subject : ""} (${a.severity}, ${a.state}, ×${a.count}): ${a.message}` +
        (a.acknowledged_by ? ` — acknowledged by ${a.acknowledged_by}: ${a.ack_reason}` : "")))));
  }
  if (t.limits) {
    const l = t.limits;
    sec.append(el("h3", {}, `Limits (${l.currency})`), el("table", { class: "stats limits" }, l.bet_types.map((r) =>
      el("tr", { "data-bet": r.bet_type, title: `${r.article} · ${r.pays}` }, el("td", {}, r.title),
        el("td", { class: "v" }, money(r.min, l.minor_digits)), el("td", { class: "v" }, r.max === null ? "no maximum" : money(r.max, l.minor_digits))))));
  }
  sec.append(el("h3", {}, "Devices"), devicesView(t.devices, t.state));
  sec.append(el("h3", {}, "Last rounds"), roundsView(t.rounds));
  return sec;
}

function render(id) {
  const main = document.getElementById("tables");
  if (!tables.size) return;
  main.querySelector(".empty")?.remove();
  const ids = id ? [id] : [...tables.keys()].sort();
  for (const tid of ids) {
    const view = tableView(tables.get(tid));
    const old = document.getElementById(`t-${tid}`);
    if (old) old.replaceWith(view); else main.append(view);
  }
}

async function main() {
  await loadWords();
  follow({
    only: ONLY,
    onSnapshot: (data) => { tables.clear(); for (const t of data.tables) tables.set(t.table_id, t); link(data.link); render(); },
    onTable: (t) => { tables.set(t.table_id, t); render(t.table_id); },
    onLink: link,
    onError: linkLost,
  });
}

main();
