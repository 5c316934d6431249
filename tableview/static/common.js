// tablectl view: what the pit page, the table page and the board share. Read-only; no
// library, no build step, nothing fetched but from the view itself.
"use strict";

const RED = new Set([1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36]);
const SVGNS = "http://www.w3.org/2000/svg";

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

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

// Money is an integer count of minor units: shown without floating point.
function money(amount, digits, { cents = true } = {}) {
  if (amount === null || amount === undefined) return "";
  const d = digits ?? 2, neg = amount < 0, a = Math.abs(amount), unit = 10 ** d;
  const whole = Math.trunc(a / unit).toLocaleString("en");
  const rest = a % unit;
  const frac = d && (cents || rest) ? "." + String(rest).padStart(d, "0") : "";
  return (neg ? "-" : "") + whole + frac;
}

// A percentage is a display figure made from exact counts (integers: no float error).
function pct(count, total) {
  if (!total) return "–";
  const tenths = Math.round((count * 1000) / total);
  return (tenths / 10).toFixed(1) + " %";
}

// -- the words of the board (static/i18n.json: zh, pt, en; the regulations' names) --------
const I18N = { data: null, lang: "en" };

function chooseLang() {
  const asked = new URLSearchParams(location.search).get("lang");
  const kept = (() => { try { return localStorage.getItem("tableview.lang"); } catch { return null; } })();
  return ["zh", "pt", "en"].includes(asked) ? asked : ["zh", "pt", "en"].includes(kept) ? kept : "en";
}

async function loadWords() {
  const r = await fetch("/static/i18n.json", { cache: "no-cache" });
  I18N.data = await r.json();
  I18N.lang = chooseLang();
  document.documentElement.lang = { zh: "zh-Hant-MO", pt: "pt-MO", en: "en" }[I18N.lang];
  return I18N.data;
}

function setLang(lang) {
  I18N.lang = lang;
  try { localStorage.setItem("tableview.lang", lang); } catch { /* a kiosk without storage */ }
  document.documentElement.lang = { zh: "zh-Hant-MO", pt: "pt-MO", en: "en" }[lang];
}

function word(entry, fallback = "") {
  if (!entry) return fallback;
  return entry[I18N.lang] ?? entry.en ?? fallback;
}

function T(key) { return word(I18N.data && I18N.data.ui[key], key); }

function gameName(game) {
  const g = I18N.data && I18N.data.games[game];
  return g ? word(g.name, game) : game;
}

function betWords(game, betType, title) {
  const g = I18N.data && I18N.data.games[game];
  const b = g && g.bets[betType];
  return { name: b ? word(b) : (title || betType), note: b && b.note ? b.note : "", src: b ? b.src : "" };
}

function langSwitch(onChange) {
  const box = el("nav", { class: "langs", "aria-label": "language" });
  for (const [code, name] of Object.entries(I18N.data.languages)) {
    const b = el("button", { type: "button", "data-lang": code, class: code === I18N.lang ? "on" : "" }, name);
    b.addEventListener("click", () => { setLang(code); onChange(); });
    box.append(b);
  }
  return box;
}

// -- cards, dice, tiles, numbers --------------------------------------------------------
const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const RANKS = { T: "10", J: "J", Q: "Q", K: "K", A: "A" };

function card(code) {
  if (typeof code !== "string" || code.length < 2) return el("span", { class: "card back" }, "?");
  const rank = code.slice(0, -1), suit = code.slice(-1);
  const red = suit === "H" || suit === "D";
  return el("span", { class: `card ${red ? "red" : "black"}`, "data-card": code, title: code },
    el("b", {}, RANKS[rank] || rank), el("i", {}, SUITS[suit] || suit));
}

function cards(list) {
  return el("span", { class: "cards" }, (list || []).map(card));
}

const PIPS = { 1: [[50, 50]], 2: [[27, 27], [73, 73]], 3: [[25, 25], [50, 50], [75, 75]],
  4: [[27, 27], [73, 27], [27, 73], [73, 73]], 5: [[27, 27], [73, 27], [50, 50], [27, 73], [73, 73]],
  6: [[27, 24], [73, 24], [27, 50], [73, 50], [27, 76], [73, 76]] };

// A die drawn in SVG: its pips (sic bo), or for fish-prawn-crab its figure's colour and word.
function die(n, figure) {
  const s = svg("svg", { class: "die", viewBox: "0 0 100 100", "data-face": n, role: "img", "aria-label": figure || String(n) });
  const FIG = { fish: "#d62d2d", prawn: "#1f9d55", gourd: "#2a62d6", coin: "#2a62d6", crab: "#1f9d55", rooster: "#d62d2d" };
  s.append(svg("rect", { x: 3, y: 3, width: 94, height: 94, rx: 16, fill: figure ? FIG[figure] || "#f5f1e6" : "#f5f1e6", stroke: "#333", "stroke-width": 2 }));
  if (figure) {
    // the word as large as the die holds it (one Chinese character at 46, "Caranguejo" at 15)
    const w = word(I18N.data.figures[figure], figure);
    const zh = I18N.lang === "zh";  // a Chinese character is about 1 em wide, a letter 0.6
    const size = Math.min(zh ? 46 : 36, Math.floor((zh ? 84 : 150) / Math.max(1, w.length)));
    const t = svg("text", { x: 50, y: 48, "text-anchor": "middle", "dominant-baseline": "central", "font-size": size, fill: "#fff", "font-weight": 800 });
    t.textContent = w;
    s.append(t);
    const p = svg("text", { x: 88, y: 90, "text-anchor": "end", "font-size": 16, fill: "#fff" });
    p.textContent = n; s.append(p);
    return s;
  }
  for (const [cx, cy] of PIPS[n] || []) s.append(svg("circle", { cx, cy, r: 9, fill: n === 1 || n === 4 ? "#c21f1f" : "#1b1b1b" }));
  return s;
}

function dice(list, figures) {
  return el("span", { class: "dice", "data-dice": (list || []).join("") },
    (list || []).map((d, i) => die(d, figures ? figures[i] : null)));
}

// A P'ai Kao tile ("4/6"): two halves of pips, red for 1 and 4 (and the 6/6's middle row).
function tile(code) {
  const [a, b] = String(code).split("/").map(Number);
  const s = svg("svg", { class: "tile", viewBox: "0 0 60 120", "data-tile": code, role: "img", "aria-label": code });
  s.append(svg("rect", { x: 2, y: 2, width: 56, height: 116, rx: 8, fill: "#f7f2e2", stroke: "#333", "stroke-width": 2 }));
  s.append(svg("line", { x1: 8, y1: 60, x2: 52, y2: 60, stroke: "#999", "stroke-width": 2 }));
  const half = (n, y0) => {
    for (const [px, py] of PIPS[n] || []) {
      s.append(svg("circle", { cx: 4 + px * 0.52, cy: y0 + 4 + py * 0.5, r: 5, fill: n === 1 || n === 4 ? "#c21f1f" : "#1b1b1b" }));
    }
  };
  half(a, 0); half(b, 58);
  return s;
}

function numberClass(n, colourless) {
  if (colourless) return "plain";
  return n === 0 ? "green" : RED.has(n) ? "red" : "black";
}

function ball(n, size, colourless = false) {
  return el("span", { class: `num ${size} ${numberClass(n, colourless)}` }, n);
}

// -- mah-jong: a tile as its face (the notation of docs/rules/mahjong.md: 1m..9m, 1p..9p,
// 1s..9s, E S W N, RD GD WD), and how the winning tile came, in the regulation's words
const MJ_NUMERALS = "一二三四五六七八九";
const MJ_SUITS = { m: "萬", p: "筒", s: "索" };
const MJ_HONOURS = { E: "東", S: "南", W: "西", N: "北", RD: "中", GD: "發", WD: "白" };

function mjTile(code, win = false) {
  const m = /^([1-9])([mps])$/.exec(code);
  const face = m ? [el("b", {}, MJ_NUMERALS[Number(m[1]) - 1]), el("i", {}, MJ_SUITS[m[2]])] : [el("b", {}, MJ_HONOURS[code] || code)];
  return el("span", { class: `mjtile ${m ? `suit-${m[2]}` : `honour h-${code}`}${win ? " win" : ""}`, "data-tile": code, title: code }, face);
}

function mjBy(by) {
  return by ? word(I18N.data && I18N.data.mahjong_wins && I18N.data.mahjong_wins[by], String(by).replace(/_/g, " ")) : "";
}

// -- an outcome in a line: readable for every game (the table page's result column) ------
function handWord(h) { return word(I18N.data && I18N.data.hands[h], String(h || "").replace(/_/g, " ")); }

function outcomeLine(o) {
  if (!o || typeof o !== "object") return el("span", {}, "");
  if (Array.isArray(o.dice) && o.figures) return el("span", {}, dice(o.dice, o.figures), ` ${o.total}`);
  if (Array.isArray(o.dice) && o.total !== undefined) return el("span", {}, dice(o.dice), ` ${o.total}`);
  if (o.number !== undefined && o.buttons !== undefined) return el("span", {}, ball(o.number, "small", true));
  if (o.number !== undefined) return el("span", {}, ball(o.number, "small"));
  if (o.winner && Array.isArray(o.player)) {
    return el("span", { class: "line" }, el("b", { class: `w-${o.winner}` }, T(o.winner)), " ",
      T("player"), " ", cards(o.player), ` ${o.player_total} · `, T("banker"), " ", cards(o.banker), ` ${o.banker_total}`);
  }
  if (o.dealer && Array.isArray(o.dealer.cards)) {  // blackjack
    const d = o.dealer;
    return el("span", { class: "line" }, T("dealer_hand"), " ", cards(d.cards), ` ${d.blackjack ? T("blackjack") : d.total > 21 ? T("bust") : d.total}`,
      ` · ${(o.places || []).length} ${T("seat")}`);
  }
  if (Array.isArray(o.dealer) && o.dealer_hand) {  // stud poker
    return el("span", { class: "line" }, T("dealer_hand"), " ", cards(o.dealer), ` ${handWord(o.dealer_hand)} · ${o.dealer_qualifies ? T("qualifies") : T("not_qualify")}`);
  }
  if (o.hands && o.banker !== undefined) {  // super pan 9, p'ai kao
    const bank = o.hands[String(o.banker)] || [];
    const tiles = bank.length && String(bank[0]).includes("/");
    return el("span", { class: "line" }, `${T("banker")} (${T("seat")} ${o.banker}) `, tiles ? el("span", { class: "tiles" }, bank.map(tile)) : cards(bank));
  }
  if (o.winner !== undefined && o.win) {  // mah-jong
    return el("span", { class: "line" }, `${T("winner")}: ${T("seat")} ${Number(o.winner) + 1} (${o.seat_wind || ""}) · `,
      o.win.tile ? mjTile(o.win.tile, true) : null, ` ${mjBy(o.win.by)}`);
  }
  return el("span", {}, JSON.stringify(o).slice(0, 80));
}

// -- the baccarat roads, as the table publishes them (firmware_host/games/roads.py) ------
const COLOURS = { B: "#d62d2d", P: "#2a62d6", T: "#1f9d55", red: "#d62d2d", blue: "#2a62d6" };

// Marks at (x, y) on a six-row grid; the last `width` columns in view.
function road(marks, kind, width, cell = 16) {
  const cols = marks.reduce((m, c) => Math.max(m, c.x + 1), 0);
  const first = Math.max(0, cols - width);
  const s = svg("svg", { class: "road", viewBox: `0 0 ${width * cell} ${6 * cell}`, "data-road": kind, "data-marks": marks.length, preserveAspectRatio: "xMinYMin meet" });
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

function askMark(colour, kind, cell = 16) {
  const s = svg("svg", { class: "road ask-mark", viewBox: `0 0 ${cell} ${cell}`, "data-ask-mark": colour || "none" });
  if (!colour) return s;
  const c = COLOURS[colour], m = cell / 2, r = cell / 2 - 3;
  if (kind === "eye") s.append(svg("circle", { cx: m, cy: m, r, fill: "none", stroke: c, "stroke-width": 1.8 }));
  else if (kind === "small") s.append(svg("circle", { cx: m, cy: m, r, fill: c }));
  else s.append(svg("line", { x1: m - r, y1: m + r, x2: m + r, y2: m - r, stroke: c, "stroke-width": 2.4 }));
  return s;
}

// -- the view's stream: a snapshot, then each table as it changes (server-sent events) ---
function follow({ only = null, onSnapshot, onTable, onLink, onError }) {
  const source = new EventSource(only ? `/events?table=${encodeURIComponent(only)}` : "/events");
  source.addEventListener("snapshot", (ev) => onSnapshot(JSON.parse(ev.data)));
  source.addEventListener("table", (ev) => onTable(JSON.parse(ev.data)));
  source.addEventListener("link", (ev) => onLink && onLink(JSON.parse(ev.data)));
  source.onerror = () => onError && onError();
  return source;
}
