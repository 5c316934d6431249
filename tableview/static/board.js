// tablectl view: the table's board for a screen facing the players (/board/<table id>),
// made to be read from three metres: the phase, the last result large, the game's history
// in its customary form, the table's limits per bet type, the jackpot meter, the time and
// the dealer on duty, in Traditional Chinese, Portuguese or English. Everything comes from
// what the table publishes (docs/mqtt.md: state, board, stats, jackpot, limits, rounds).
// What is drawn follows the shape of the published data (a board layout, dice, cards,
// tiles), never a game's id: the words are looked up by the game's id in i18n.json.
"use strict";

const BOARD = { table: null, id: null, linkUp: true };

function tableIdFromPath() {
  const m = location.pathname.match(/^\/board\/([^/]+)$/);
  return m ? decodeURIComponent(m[1]) : null;
}

// -- the last result, large ----------------------------------------------------------------
function bigSmall(total, triple) {
  if (triple) return el("span", { class: "tag triple" }, T("triple"));
  return el("span", { class: `tag ${total >= 11 ? "big" : "small"}` }, total >= 11 ? T("big") : T("small"));
}

function isTriple(d) { return d.length === 3 && d[0] === d[1] && d[1] === d[2]; }

function resultView(t) {
  const b = t.board || {}, o = b.outcome;
  if (!o) return el("div", { class: "res none" }, T("no_result"));
  if (b.number !== null && b.number !== undefined && b.layout) {
    const plain = o.buttons !== undefined;  // fantan's numbers have no colour
    const colour = plain ? "" : b.number === 0 ? T("zero") : RED.has(b.number) ? T("red") : T("black");
    return el("div", { class: "res number", "data-result": b.number }, ball(b.number, "huge", plain),
      colour ? el("div", { class: "caption" }, colour) : el("div", { class: "caption" }, `${T("fan")} ${b.number}`));
  }
  if (Array.isArray(o.dice) && o.total !== undefined) {  // three dice and their total
    return el("div", { class: "res dice-result", "data-result": o.dice.join("") }, dice(o.dice, o.figures),
      el("div", { class: "caption" }, el("span", { class: "total" }, o.total), " ", bigSmall(o.total, isTriple(o.dice))));
  }
  if (o.winner && Array.isArray(o.player)) {  // two hands, a winner (baccarat)
    const side = (name, list, total) => el("div", { class: `side ${name}${o.winner === name ? " won" : ""}` },
      el("div", { class: "who" }, T(name), el("span", { class: "pts" }, total)), cards(list));
    return el("div", { class: "res hands", "data-result": o.winner },
      el("div", { class: "sides" }, side("player", o.player, o.player_total), side("banker", o.banker, o.banker_total)),
      el("div", { class: "caption" }, T(o.winner),
        o.player_pair ? el("span", { class: "tag pair-p" }, T("player_pair")) : null,
        o.banker_pair ? el("span", { class: "tag pair-b" }, T("banker_pair")) : null));
  }
  if (o.dealer && Array.isArray(o.dealer.cards)) {  // the dealer's hand against each place's
    const d = o.dealer;
    const verdict = d.blackjack ? T("blackjack") : d.total > 21 ? `${d.total} ${T("bust")}` : d.total;
    return el("div", { class: "res hands", "data-result": d.total },
      el("div", { class: "side dealer" }, el("div", { class: "who" }, T("dealer_hand"), el("span", { class: "pts" }, verdict)), cards(d.cards)),
      el("div", { class: "places" }, (o.places || []).flatMap((p) => p.hands.map((h) =>
        el("div", { class: `place ${h.status}` }, el("div", { class: "who" }, `${T("seat")} ${p.seat}`,
          el("span", { class: "pts" }, h.blackjack ? T("blackjack") : h.total > 21 ? T("bust") : h.total)), cards(h.cards))))));
  }
  if (Array.isArray(o.dealer) && o.dealer_hand) {  // five-card hands against the dealer's
    return el("div", { class: "res hands", "data-result": o.dealer_hand },
      el("div", { class: "side dealer" }, el("div", { class: "who" }, T("dealer_hand"), el("span", { class: "pts" }, handWord(o.dealer_hand))),
        cards(o.dealer), el("div", { class: "caption small" }, o.dealer_qualifies ? T("qualifies") : T("not_qualify"))),
      el("div", { class: "places" }, Object.entries(o.seats || {}).map(([seat, s]) =>
        el("div", { class: `place ${s.beats_dealer ? "won" : ""} ${s.action}` }, el("div", { class: "who" }, `${T("seat")} ${seat}`,
          el("span", { class: "pts" }, handWord(s.hand))), cards(s.cards)))));
  }
  if (o.hands && o.banker !== undefined) {  // a player-banked table: every place's hand
    const places = Object.entries(o.hands);
    return el("div", { class: "res hands", "data-result": `banker-${o.banker}` },
      el("div", { class: "places" }, places.map(([seat, hand]) => {
        const tiles = hand.length && String(hand[0]).includes("/");
        return el("div", { class: `place${String(o.banker) === seat ? " banker" : ""}` },
          el("div", { class: "who" }, String(o.banker) === seat ? `${T("banker")} · ${T("seat")} ${seat}` : `${T("seat")} ${seat}`),
          tiles ? el("span", { class: "tiles" }, hand.map(tile)) : cards(hand));
      })),
      o.dice ? el("div", { class: "caption small" }, dice(o.dice), ` ${o.dice_total ?? ""}`) : null);
  }
  if (o.winner !== undefined && o.win) {  // a declared mah-jong win
    const tiles = [...(o.concealed || []), ...(o.melds || []).flatMap((m) => m.tiles || [])];
    return el("div", { class: "res hands", "data-result": `winner-${o.winner}` },
      el("div", { class: "caption" }, `${T("winner")}: ${T("seat")} ${Number(o.winner) + 1} (${o.seat_wind || ""})`),
      el("div", { class: "mj" }, tiles.map((x) => mjTile(x)), o.win.tile ? mjTile(o.win.tile, true) : null),
      o.win.by ? el("div", { class: "caption small" }, mjBy(o.win.by)) : null);
  }
  return el("div", { class: "res", "data-result": "?" }, outcomeLine(o));
}

// -- the history, in the game's customary form -------------------------------------------------
function rouletteHistory(t) {
  const b = t.board, s = t.stats || {};
  const spins = b.number === null ? [] : [b.number, ...b.history];
  const rows = spins.slice(0, 12).map((n) => el("div", { class: "vrow" },
    el("span", { class: "vc red" }, RED.has(n) ? ball(n, "mid") : ""),
    el("span", { class: "vc zero" }, n === 0 ? ball(n, "mid") : ""),
    el("span", { class: "vc black" }, n !== 0 && !RED.has(n) ? ball(n, "mid") : "")));
  const vertical = el("div", { class: "vertical", "data-history": spins.join(",") },
    el("div", { class: "vrow head" }, el("span", {}, T("red")), el("span", {}, "0"), el("span", {}, T("black"))), rows);
  const side = el("div", { class: "side-stats" });
  if (s.hot) {
    side.append(el("h3", {}, T("hot")), el("div", { class: "balls", "data-hot": s.hot.join(",") }, s.hot.map((n) => ball(n, "small"))),
      el("h3", {}, T("cold")), el("div", { class: "balls", "data-cold": s.cold.join(",") }, s.cold.map((n) => ball(n, "small"))));
  }
  const sectors = t.limits && t.limits.rules && t.limits.rules.sectors9;
  if (sectors && s.counts && s.rounds) {
    const rows2 = Object.entries(sectors).map(([name, nums]) => {
      const c = nums.reduce((a, n) => a + (s.counts[String(n)] || 0), 0);
      return el("tr", { "data-sector": name }, el("td", {}, name), el("td", { class: "v" }, pct(c, s.rounds)),
        el("td", {}, el("span", { class: "bar", style: `width:${(4 * c) / s.rounds}em` })));
    });
    rows2.push(el("tr", { "data-sector": "0" }, el("td", {}, "0"), el("td", { class: "v" }, pct(s.counts["0"] || 0, s.rounds)), el("td")));
    side.append(el("h3", {}, `${T("sectors")} (${s.rounds})`), el("table", { class: "sectors" }, rows2));
  }
  if (s.chances && s.rounds) {
    const c = s.chances;
    side.append(el("div", { class: "chances" }, [["red", c.red], ["black", c.black], ["odd", c.odd], ["even", c.even]].map(([k, v]) =>
      el("span", { class: `chance ${k}` }, `${T(k)} ${pct(v, s.rounds)}`))));
  }
  return el("div", { class: "history roulette" }, vertical, side);
}

function numberHistory(t) {  // fantan: the numbers in a row, and how often each came
  const b = t.board, s = t.stats || {};
  const spins = b.number === null ? [] : [b.number, ...b.history];
  return el("div", { class: "history numbers" },
    el("div", { class: "balls wrap", "data-history": spins.join(",") }, spins.map((n) => ball(n, "mid", true))),
    s.counts && s.rounds ? el("div", { class: "chances" }, Object.entries(s.counts).map(([k, v]) =>
      el("span", { class: "chance" }, `${k}: ${pct(v, s.rounds)}`))) : null);
}

function diceHistory(t) {
  const recent = (t.board.recent || []).filter((r) => r.outcome && Array.isArray(r.outcome.dice));
  const rows = recent.map((r) => {
    const o = r.outcome;
    return el("div", { class: "drow", "data-seq": r.seq }, dice(o.dice, o.figures), el("span", { class: "total" }, o.total), bigSmall(o.total, isTriple(o.dice)));
  });
  const s = t.stats || {};
  const summary = s.chances && s.rounds ? el("div", { class: "chances" },
    el("span", { class: "chance big" }, `${T("big")} ${pct(s.chances.big, s.rounds)}`),
    el("span", { class: "chance small" }, `${T("small")} ${pct(s.chances.small, s.rounds)}`),
    el("span", { class: "chance triple" }, `${T("triple")} ${pct(s.triples ? s.triples.any : 0, s.rounds)}`)) : null;
  return el("div", { class: "history dice-history", "data-history": recent.length }, rows, summary);
}

function roadsHistory(t) {
  const r = t.board.roads;
  if (!r) return null;
  const c = r.counts;
  const withTies = r.big_road.map((m, i) => (i === 0 && r.leading_ties ? { ...m, ties: m.ties + r.leading_ties } : m));
  const ask = (side, key) => el("div", { class: "ask", "data-ask": side }, el("b", {}, T(key)),
    askMark(r.predictions[side].big_eye_boy, "eye"), askMark(r.predictions[side].small_road, "small"), askMark(r.predictions[side].cockroach_pig, "roach"));
  const box = (key, node) => el("div", { class: `roadbox ${key}` }, el("h3", {}, T(key)), node);
  return el("div", { class: "history roads", "data-coups": c.coups },
    box("bead_plate", road(r.bead_plate, "bead", 12)), box("big_road", road(withTies, "big", 24)),
    box("big_eye_boy", road(r.big_eye_boy, "eye", 12)), box("small_road", road(r.small_road, "small", 12)),
    box("cockroach_pig", road(r.cockroach_pig, "roach", 12)),
    el("div", { class: "roadbox counts" }, el("div", { class: "tally" },
      el("span", { class: "b" }, `${T("banker")} ${c.banker}`), el("span", { class: "p" }, `${T("player")} ${c.player}`),
      el("span", { class: "t" }, `${T("tie")} ${c.tie}`), el("span", {}, `${T("coups")} ${c.coups}`)),
    ask("B", "banker_ask"), ask("P", "player_ask")));
}

function handsHistory(t) {  // the card, tile and declared games: their last rounds, in a line each
  const recent = t.board.recent || [];
  return el("div", { class: "history lines", "data-history": recent.length },
    recent.map((r) => el("div", { class: "hline", "data-seq": r.seq }, el("span", { class: "seq" }, `#${r.seq}`), outcomeLine(r.outcome))));
}

function historyView(t) {
  const b = t.board;
  if (!b) return null;
  let node;
  if (b.roads) node = roadsHistory(t);
  else if (b.layout && b.number !== undefined && b.outcome && b.outcome.buttons !== undefined) node = numberHistory(t);
  else if (b.layout && (b.history.length || b.number !== null) && !(b.recent || []).length) node = rouletteHistory(t);
  else if ((b.recent || []).some((r) => r.outcome && Array.isArray(r.outcome.dice) && r.outcome.total !== undefined)) node = diceHistory(t);
  else node = handsHistory(t);
  return el("section", { class: "panel history-panel" }, el("h2", {}, T("history")), node);
}

// -- limits, jackpot ----------------------------------------------------------------------------
function limitsView(t) {
  const l = t.limits;
  const box = el("section", { class: "panel limits-panel" }, el("h2", {}, T("limits"), l ? el("span", { class: "cur" }, l.currency) : null));
  if (!l) return box.appendChild(el("p", { class: "note" }, T("limits_unknown"))) && box;
  if (!l.bet_types.length) return box.appendChild(el("p", { class: "note" }, T("no_bets"))) && box;
  const amount = (v) => (v === null ? T("no_max") : money(v, l.minor_digits, { cents: false }));
  box.append(el("table", { class: "limits", "data-currency": l.currency },
    el("tr", {}, el("th"), el("th", {}, T("min")), el("th", {}, T("max"))),
    l.bet_types.map((row) => {
      const w = betWords(l.game, row.bet_type, row.title);
      return el("tr", { "data-bet": row.bet_type, title: `${row.title} · ${row.article} · ${row.pays}` },
        el("td", { class: "bet-name" }, w.name, w.note ? el("span", { class: "bet-note" }, w.note) : null),
        el("td", { class: "m", "data-min": row.min }, amount(row.min)), el("td", { class: "m", "data-max": row.max ?? "" }, amount(row.max)));
    })));
  return box;
}

function jackpotView(t) {
  const j = t.jackpot;
  if (!j) return null;
  const d = j.minor_digits ?? 2;
  const box = el("section", { class: "panel jackpot-panel" },
    el("h2", {}, T("jackpot")),
    el("div", { class: "meter", "data-jackpot": j.amount }, el("span", { class: "cur" }, j.currency), money(j.amount, d)));
  if (j.locked) {  // a hit whose payment is pending stands beside the meter (docs/integrity.md)
    const l = j.locked;
    box.append(el("div", { class: "pending", "data-jackpot-locked": l.amount },
      el("div", { class: "label" }, T("jackpot_pending")),
      el("div", { class: "amount" }, `${j.currency} ${money(l.amount, d)}`),
      el("div", { class: "who" }, `${T("seat")} ${l.seat ?? "?"} · ${handWord(l.hand)}${l.waiting > 1 ? ` (+${l.waiting - 1})` : ""}`)));
  }
  return box;
}

// -- the page ----------------------------------------------------------------------------------
function phaseOf(t) {
  const st = t.state || {}, b = t.board || {};
  if (!BOARD.linkUp) return ["offline", T("connection_lost")];
  if (st.availability && st.availability !== "online") return ["offline", T("table_offline")];
  const message = b.message || "idle";
  const text = message === "void" ? `${T("void")}` : T(message);
  return [message, text];
}

function lastDealer(t) {
  if (t.board && t.board.dealer) return t.board.dealer;
  const r = (t.rounds || []).find((x) => x.dealer);
  return r ? r.dealer : null;
}

function render() {
  const t = BOARD.table;
  const root = document.getElementById("board");
  if (!t) { root.replaceChildren(el("p", { class: "waiting" }, "…")); return; }
  const game = (t.state && t.state.game) || (t.board && t.board.game) || (t.limits && t.limits.game) || "";
  const [phase, phaseText] = phaseOf(t);
  const b = t.board || {};
  root.dataset.game = game; root.dataset.message = b.message || ""; root.dataset.round = b.round_id || "";
  // the round of the last result (the round in progress moves on when betting opens)
  const shown = b.outcome_round_id !== undefined ? b.outcome_seq : b.seq;
  root.dataset.resultRound = b.outcome_round_id !== undefined ? b.outcome_round_id || "" : b.round_id || "";
  root.dataset.phase = phase;
  const name = (t.limits && t.limits.name) || t.table_id;
  const top = el("header", { class: "top" },
    el("div", { class: "title" }, el("span", { class: "game", "data-game-name": game }, gameName(game)), el("span", { class: "table-name" }, name)),
    el("div", { class: "clock", id: "clock" }, clockText()),
    langSwitch(render));
  const banner = el("div", { class: `phase ${phase}`, "data-phase": phase }, phaseText || "\u00a0",
    b.message === "void" && b.void_reason ? el("span", { class: "reason" }, b.void_reason) : null);
  const result = el("section", { class: "panel result-panel" }, el("h2", {}, T("last_result"), shown && b.outcome ? el("span", { class: "seq" }, `${T("round")} ${shown}`) : null), resultView(t));
  const footer = el("footer", { class: "bottom" },
    el("span", { class: "dealer", "data-dealer": lastDealer(t) || "" }, `${T("dealer")}: ${lastDealer(t) || T("no_dealer")}`),
    el("span", { class: "table-id" }, t.table_id));
  // two columns on a landscape screen (the result and its history; the jackpot and the
  // limits), one on a portrait one or a phone (result, jackpot, history, limits)
  root.replaceChildren(top, banner, el("main", { class: "grid" },
    el("div", { class: "col main-col" }, result, historyView(t)),
    el("div", { class: "col side-col" }, jackpotView(t), limitsView(t))), footer);
  fitScreen();
}

// A screen facing the players cannot be scrolled: on a screen (landscape or portrait,
// 900 px wide or more) the oldest lines of the history give way until the board fits
// its height (a phone scrolls down as any page does).
function fitScreen() {
  if (innerWidth < 900) return;
  const fits = () => document.documentElement.scrollHeight <= innerHeight;
  const lines = [...document.querySelectorAll(".history-panel .vrow:not(.head), .history-panel .drow, .history-panel .hline")];
  while (!fits() && lines.length > 3) lines.pop().remove();
  // the roads cannot lose a column: they are drawn narrower (and so lower) instead
  const roads = document.querySelector(".history-panel .roads");
  for (let w = 95; roads && !fits() && w >= 40; w -= 5) roads.style.maxWidth = `${w}%`;
  document.getElementById("board").dataset.shown = document.querySelectorAll(
    ".history-panel .vrow:not(.head), .history-panel .drow, .history-panel .hline").length;
}

function clockText() {
  const d = new Date();
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((x) => String(x).padStart(2, "0")).join(":");
}

async function main() {
  await loadWords();
  BOARD.id = tableIdFromPath();
  render();
  setInterval(() => { const c = document.getElementById("clock"); if (c) c.textContent = clockText(); }, 1000);
  follow({
    only: BOARD.id,
    onSnapshot: (data) => {
      BOARD.linkUp = data.link.connected;
      BOARD.table = BOARD.id ? data.tables.find((x) => x.table_id === BOARD.id) || null : data.tables[0] || null;
      if (BOARD.table && !BOARD.id) BOARD.id = BOARD.table.table_id;
      render();
    },
    onTable: (t) => { if (!BOARD.id || t.table_id === BOARD.id) { BOARD.table = t; BOARD.id = t.table_id; render(); } },
    onLink: (l) => { if (BOARD.linkUp !== l.connected) { BOARD.linkUp = l.connected; render(); } },
  });
  addEventListener("resize", render);
}

main();
