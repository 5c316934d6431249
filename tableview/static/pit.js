// tablectl view: the pit page (/): every table at a glance, sortable, each linking to its
// table's page and its board. The shift's figures are added up by the view from the
// settled rounds it received since it started (handle: stakes; win: the house's net;
// hold: win / handle; rounds per hour between the first round's opening and the last
// round's end): labelled so. A table's witness (docs/witness.md) has its own column.
"use strict";

const PIT = { tables: new Map(), sort: { key: "table", dir: 1 } };

function perHour(tot) {
  if (!tot || !tot.first_at || !tot.last_at) return null;
  const secs = (Date.parse(tot.last_at) - Date.parse(tot.first_at)) / 1000;
  return secs >= 60 ? Math.round(((tot.rounds + tot.voids) * 3600) / secs) : null;
}

function alertsOf(t) {
  const a = (t.alerts && t.alerts.alerts) || [];
  return { open: a.length, unacked: a.filter((x) => !x.acknowledged_by).length, list: a };
}

function devicesOf(t) {  // the table's devices (its witness has a column of its own)
  const d = Object.values(t.devices || {}).filter((x) => x.kind !== "witness");
  return { total: d.length, bad: d.filter((x) => x.state !== "online").length, list: d };
}

// The witness's health (docs/witness.md): its retained devices/<name>, kind "witness";
// the disagreements over the comparisons as exact counts (agreed + disagreed).
function witnessesOf(t) { return Object.values(t.devices || {}).filter((x) => x.kind === "witness"); }

function witnessCell(t) {
  const list = witnessesOf(t);
  if (!list.length) return el("td", { class: "note", "data-witness": "none" }, "none");
  return el("td", { "data-witness": list.map((x) => x.state).join(",") }, list.map((x) => {
    const w = x.witness || {};
    const compared = (w.agreed ?? 0) + (w.disagreed ?? 0);
    return el("div", { class: `device ${x.state}`, title: `${x.device}: ${x.state} ${x.code || ""} ${x.message || ""}` },
      `${x.state}${x.code ? ` ${x.code}` : ""}`, compared ? ` · ${w.disagreed} / ${compared} disagreed (${pct(w.disagreed, compared)})` : "");
  }));
}

function gameOf(t) { return (t.state && t.state.game) || (t.board && t.board.game) || (t.limits && t.limits.game) || ""; }

function dealerOf(t) {
  if (t.board && t.board.dealer) return t.board.dealer;
  const r = (t.rounds || []).find((x) => x.dealer);
  return r ? r.dealer : "";
}

// Each column: its header, how it sorts (a value), how it draws.
const COLUMNS = [
  ["table", "Table", (t) => t.table_id, (t) => el("td", {}, el("a", { href: `/table/${encodeURIComponent(t.table_id)}`, class: "tid" }, t.table_id),
    " ", el("a", { href: `/board/${encodeURIComponent(t.table_id)}`, class: "boardlink", title: "the players' board" }, "board"))],
  ["game", "Game", (t) => gameOf(t), (t) => el("td", {}, gameOf(t))],
  ["phase", "Phase", (t) => (t.state ? `${t.state.availability}/${t.state.phase}` : ""), (t) => {
    const st = t.state || {};
    const off = st.availability && st.availability !== "online";
    return el("td", { "data-phase": st.phase || "" }, el("span", { class: `badge ${off ? "off" : st.phase === "open" ? "on" : ""}` }, off ? st.availability : st.phase || "?"),
      (st.faults || []).length ? el("span", { class: "faults" }, ` ${st.faults.join(", ")}`) : null);
  }],
  ["result", "Last result", (t) => (t.board && t.board.seq) || 0, (t) => {
    const b = t.board || {};
    const o = b.outcome || ((t.rounds || []).find((r) => r.status === "settled") || {}).outcome;
    return el("td", { class: "result" }, o ? outcomeLine(o) : "–");
  }],
  ["dealer", "Dealer", (t) => dealerOf(t), (t) => el("td", { "data-dealer": dealerOf(t) }, dealerOf(t) || "–")],
  ["pace", "Rounds/h", (t) => perHour(t.totals) ?? -1, (t) => el("td", { class: "m" }, perHour(t.totals) ?? "–")],
  ["handle", "Handle", (t) => (t.totals ? t.totals.handle : 0), (t) => el("td", { class: "m", "data-handle": t.totals ? t.totals.handle : 0 },
    t.totals && t.totals.currency ? `${money(t.totals.handle, t.totals.minor_digits)}` : "–")],
  ["win", "Win", (t) => (t.totals ? t.totals.win : 0), (t) => el("td", { class: `m ${t.totals && t.totals.win < 0 ? "neg" : ""}`, "data-win": t.totals ? t.totals.win : 0 },
    t.totals && t.totals.currency ? money(t.totals.win, t.totals.minor_digits) : "–")],
  ["hold", "Hold", (t) => (t.totals && t.totals.handle ? t.totals.win / t.totals.handle : -1e9), (t) => el("td", { class: "m" }, t.totals ? pct(t.totals.win, t.totals.handle) : "–")],
  ["alerts", "Alerts", (t) => alertsOf(t).unacked * 1000 + alertsOf(t).open, (t) => {
    const a = alertsOf(t);
    if (!a.open) return el("td", { "data-alerts": 0 }, "–");
    return el("td", { "data-alerts": a.open, "data-unacknowledged": a.unacked }, el("ul", { class: "alerts" }, a.list.map((x) =>
      el("li", { class: `alert ${x.severity} ${x.acknowledged_by ? "acknowledged" : "open"}`, title: x.message },
        `${x.code}${x.acknowledged_by ? ` (ack. ${x.acknowledged_by})` : " (not acknowledged)"}`))));
  }],
  ["devices", "Devices", (t) => devicesOf(t).bad, (t) => {
    const d = devicesOf(t);
    return el("td", { "data-devices-bad": d.bad }, d.list.map((x) => el("span", { class: `device ${x.state}`, title: `${x.device}: ${x.state} ${x.code || ""} ${x.message || ""}` }, x.device)));
  }],
  ["witness", "Witness", (t) => { const w = witnessesOf(t); return w.length ? w.filter((x) => x.state !== "online").length : -1; }, witnessCell],
  ["jackpot", "Jackpot", (t) => (t.jackpot ? t.jackpot.amount : -1), (t) => {
    const j = t.jackpot;
    if (!j) return el("td", {}, "–");
    return el("td", { class: "m", "data-jackpot": j.amount }, `${j.currency} ${money(j.amount, j.minor_digits)}`,
      j.locked ? el("div", { class: "locked", "data-jackpot-locked": j.locked.amount }, `hit pending: ${money(j.locked.amount, j.minor_digits)}`) : null);
  }],
];

function sinceText() {
  const since = [...PIT.tables.values()].map((t) => t.totals && t.totals.since).filter(Boolean).sort()[0];
  return since ? new Date(since).toLocaleString() : "–";
}

function totalsRow(list) {
  const by = new Map();
  for (const t of list) {
    const k = t.totals && t.totals.currency;
    if (!k) continue;
    const a = by.get(k) || { handle: 0, win: 0, rounds: 0, digits: t.totals.minor_digits };
    a.handle += t.totals.handle; a.win += t.totals.win; a.rounds += t.totals.rounds;
    by.set(k, a);
  }
  return [...by.entries()].map(([cur, a]) => el("tr", { class: "total", "data-currency": cur },
    el("td", { colspan: 5 }, `All tables (${cur}), ${a.rounds} settled rounds`), el("td"),
    el("td", { class: "m", "data-handle": a.handle }, money(a.handle, a.digits)), el("td", { class: "m", "data-win": a.win }, money(a.win, a.digits)),
    el("td", { class: "m" }, pct(a.win, a.handle)), el("td", { colspan: 4 })));
}

function render() {
  const main = document.getElementById("pit");
  const list = [...PIT.tables.values()];
  if (!list.length) return;
  const col = COLUMNS.find((c) => c[0] === PIT.sort.key) || COLUMNS[0];
  list.sort((a, b) => {
    const x = col[2](a), y = col[2](b);
    return (x < y ? -1 : x > y ? 1 : a.table_id < b.table_id ? -1 : 1) * PIT.sort.dir;
  });
  const head = el("tr", {}, COLUMNS.map(([key, title]) => {
    const th = el("th", { "data-sort": key, class: key === PIT.sort.key ? (PIT.sort.dir > 0 ? "asc" : "desc") : "" }, title);
    th.addEventListener("click", () => { PIT.sort = { key, dir: PIT.sort.key === key ? -PIT.sort.dir : 1 }; render(); });
    return th;
  }));
  const rows = list.map((t) => el("tr", { "data-table": t.table_id },
    COLUMNS.map(([key, title, , draw]) => { const td = draw(t); td.dataset.label = title; td.dataset.col = key; return td; })));
  main.replaceChildren(
    el("p", { class: "note", id: "basis" }, `Handle, win, hold and rounds per hour: from the settled rounds this view received since ${sinceText()} (not the table's shift accounts).`),
    el("table", { class: "pit" }, el("thead", {}, head), el("tbody", {}, rows), el("tfoot", {}, totalsRow(list))));
}

async function main() {
  await loadWords();
  follow({
    onSnapshot: (data) => { PIT.tables.clear(); for (const t of data.tables) PIT.tables.set(t.table_id, t); link(data.link); render(); },
    onTable: (t) => { PIT.tables.set(t.table_id, t); render(); },
    onLink: link,
    onError: linkLost,
  });
}

main();
