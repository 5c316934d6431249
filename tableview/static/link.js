// tablectl view: the header of the pit and table pages: the broker, whether the view
// verifies what it shows (the tables' signatures), what it follows and what it ignored.
"use strict";

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

function linkLost() {
  const e = document.getElementById("link");
  e.textContent = "view reconnecting…";
  e.className = "badge warn";
}
