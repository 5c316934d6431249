// tablectl view: draws each table from what it publishes (docs/mqtt.md): state, board,
// stats, jackpot, devices/<name>, rounds, events. Read-only; no library, no build step.
"use strict";

const tables = new Map();
const RED = new Set([1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36]);
const MESSAGES = {
  place_your_bets: "Place your bets", no_more_bets: "No more bets",
  result: "Result", void: "Void", idle: "",
};

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v; else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// Money is an integer count of minor units: shown without floating point.
function money(amount, digits) {
  if (amount === null || amount === undefined) return "";
  const d = digits ?? 2, neg = amount < 0, a = Math.abs(amount), unit = 10 ** d;
  const whole = Math.trunc(a / unit).toLocaleString("en");
  const frac = d ? "." + String(a % unit).padStart(d, "0") : "";
  return (neg ? "-" : "") + whole + frac;
}

// A percentage is a display figure made from exact counts.
function pct(count, total) {
  if (!total) return "–";
  return (Math.round((count * 1000) / total) / 10).toFixed(1) + " %";
}

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

// -- roads ---------------------------------------------------------------------------------
const CELL = 16;
const COLOURS = { B: "#d62d2d", P: "#2a62d6", T: "#1f9d55", red: "#d62d2d", blue: "#2a62d6" };
const SVGNS = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// Draw marks at (x, y) on a six-row grid; keep the last `width` columns in view.
function road(marks, kind, width, cell = CELL) {
  const cols = marks.reduce((m, c) => Math.max(m, c.x + 1), 0);
  const first = Math.max(0, cols - width);
  const s = svg("svg", { class: "road", width: width * cell, height: 6 * cell, "data-road": kind, "data-marks": marks.length });
  for (let i = 0; i <= width; i++) s.append(svg("line", { x1: i * cell, y1: 0, x2: i * cell, y2: 6 * cell, stroke: "#ddd6c4" }));
  for (let j = 0; j <= 6; j++) s.append(svg("line", { x1: 0, y1: j * cell, x2: width * cell, y2: j * cell, stroke: "#ddd6c4" }));
  const r = cell / 2 - 2;
  for (const m of marks) {
    if (m.x < first) continue;
    const cx = (m.x - first) * cell + cell / 2, cy = m.y * cell + cell / 2;
    const colour = COLOURS[m.winner || m.colour];
    if (kind === "bead") {
      s.append(svg("circle", { cx, cy, r, fill: colour }));
      const t = svg("text", { x: cx, y: cy + 4, "text-anchor": "middle", "font-size": 10, fill: "#fff", "font-weight": 700 });
      t.textContent = m.winner; s.append(t);
    } else if (kind === "big" || kind === "eye") {
      s.append(svg("circle", { cx, cy, r: kind === "eye" ? r - 1 : r, fill: "none", stroke: colour, "stroke-width": kind === "eye" ? 1.6 : 2.4 }));
    } else if (kind === "small") {
      s.append(svg("circle", { cx, cy, r: r - 1, fill: colour }));
    } else {  // cockroach pig: a slash
      s.append(svg("line", { x1: cx - r, y1: cy + r, x2: cx + r, y2: cy - r, stroke: colour, "stroke-width": 2.4 }));
    }
    if (m.ties) {
      s.append(svg("line", { x1: cx - r, y1: cy + r, x2: cx + r, y2: cy - r, stroke: COLOURS.T, "stroke-width": 2 }));
      if (m.ties > 1) { const t = svg("text", { x: cx, y: cy + 4, "text-anchor": "middle", "font-size": 9, fill: COLOURS.T, "font-weight": 700 }); t.textContent = m.ties; s.append(t); }
    }
    if (m.banker_pair) s.append(svg("circle", { cx: cx - r + 1, cy: cy - r + 1, r: 2.4, fill: COLOURS.B }));
    if (m.player_pair) s.append(svg("circle", { cx: cx + r - 1, cy: cy + r - 1, r: 2.4, fill: COLOURS.P }));
  }
  return s;
}

function askMark(colour, kind) {
  const s = svg("svg", { class: "road", width: CELL, height: CELL, "data-ask-mark": colour || "none" });
  if (!colour) return s;
  const c = COLOURS[colour], m = CELL / 2, r = CELL / 2 - 3;
  if (kind === "eye") s.append(svg("circle", { cx: m, cy: m, r, fill: "none", stroke: c, "stroke-width": 1.8 }));
  else if (kind === "small") s.append(svg("circle", { cx: m, cy: m, r, fill: c }));
  else s.append(svg("line", { x1: m - r, y1: m + r, x2: m + r, y2: m - r, stroke: c, "stroke-width": 2.4 }));
  return s;
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
function outcomeText(o) {
  if (!o) return "";
  if (o.dice) return o.dice.join("-") + (o.total !== undefined ? ` (${o.total})` : "");
  if (o.number !== undefined) return String(o.number) + (o.colour ? ` ${o.colour}` : "");
  if (o.winner) return `${o.winner} (player ${o.player_total}, banker ${o.banker_total})`;
  return JSON.stringify(o).slice(0, 60);
}

function roundsView(rounds) {
  if (!rounds.length) return el("p", { class: "note" }, "No round since the view started.");
  return el("table", { class: "rounds" },
    el("tr", {}, ["#", "result", "bets", "stakes", "paid", "house"].map((h) => el("th", {}, h))),
    rounds.map((r) => {
      const t = r.totals || {}, d = r.minor_digits;
      const count = r.bets_count ?? r.bets.length;
      const listed = count > r.bets.length ? ` (first ${r.bets.length} listed)` : "";
      const bets = el("details", {}, el("summary", {}, `${count} bets${listed}`), el("table", { class: "bets" },
        r.bets.map((b) => el("tr", { class: b.result }, el("td", {}, `seat ${b.seat}`), el("td", {}, b.bet_type),
          el("td", {}, b.selection === null ? "" : JSON.stringify(b.selection)), el("td", { class: "m" }, money(b.stake, d)),
          el("td", {}, b.result), el("td", { class: "m" }, money(b.payout, d))))));
      return el("tr", { class: r.status, "data-round": r.round_id },
        el("td", {}, r.seq), el("td", {}, r.status === "void" ? `void: ${r.void_reason}` : outcomeText(r.outcome)),
        el("td", {}, bets), el("td", { class: "m" }, money(t.stakes, d)), el("td", { class: "m" }, money(t.payout, d)),
        el("td", { class: "m" }, money(t.house_net, d)));
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
  let resultText = "";
  if (b && b.message === "result") resultText = `: ${outcomeText(b.outcome)}`;
  const sec = el("section", {
    class: "table", id: `t-${t.table_id}`, "data-table": t.table_id, "data-game": game,
    "data-message": message, "data-round": b ? b.round_id : "", "data-seq": b ? b.seq : "",
  });
  sec.append(el("div", { class: "head" },
    el("h2", {}, t.table_id), el("span", {}, game),
    el("span", { class: `badge ${online ? "on" : "off"}` }, st.availability || "unknown"),
    el("span", { class: "badge" }, `phase ${st.phase || (b && b.phase) || "?"}`)));
  if (b) sec.append(el("div", { class: `message ${message}` }, (MESSAGES[message] || message) + resultText + voidText));
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

const REASONS = {
  not_followed: "of tables not followed", too_large: "too large", malformed: "not a JSON object",
  table_mismatch: "naming another table", unverified: "not signed by their table",
  too_many_tables: "of tables beyond the cap", too_many_devices: "of devices beyond the cap",
  over_budget: "beyond a table's bytes", dropped: "dropped in a flood",
};

function link(l) {
  const e = document.getElementById("link");
  e.textContent = l.connected ? `live: ${l.broker}` : `broker unreachable: ${l.broker}`;
  e.className = `badge ${l.connected ? "on" : "off"}`;
  // whether the view verifies what it shows (the tables' signatures), and what it left out
  const t = document.getElementById("trust");
  t.dataset.verifying = l.verifying ? "yes" : "no";
  t.textContent = l.verifying ? "signatures verified" : "signatures not verified";
  t.className = `badge ${l.verifying ? "on" : "warn"}`;
  t.title = l.verifying
    ? `only what each table signed is shown (keys of ${l.keys_for.join(", ")})`
    : "the view has no table's public key (--key, --registry): a client that may publish on a table's topics can change what this page shows";
  const caps = l.caps || {};
  document.getElementById("following").textContent =
    `following ${l.following} (at most ${caps.tables} tables, ${caps.history} rounds each)`;
  const ignored = Object.entries(l.ignored || {}).filter(([, n]) => n);
  const total = ignored.reduce((a, [, n]) => a + n, 0);
  const g = document.getElementById("ignored");
  g.dataset.ignored = total;
  g.textContent = total ? `ignored messages: ${ignored.map(([k, n]) => `${n} ${REASONS[k] || k}`).join(" · ")}` : "";
}

const source = new EventSource("/events");
source.addEventListener("snapshot", (ev) => {
  const data = JSON.parse(ev.data);
  tables.clear();
  for (const t of data.tables) tables.set(t.table_id, t);
  link(data.link); render();
});
source.addEventListener("table", (ev) => {
  const t = JSON.parse(ev.data);
  tables.set(t.table_id, t); render(t.table_id);
});
source.addEventListener("link", (ev) => link(JSON.parse(ev.data)));
source.onerror = () => { const e = document.getElementById("link"); e.textContent = "view reconnecting…"; e.className = "badge warn"; };
