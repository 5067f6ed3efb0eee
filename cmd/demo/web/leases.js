// ratekit demo page: the concurrency limiter's panel. It acquires leases
// (POST /api/leases), lists those it holds with the time each has left,
// releases them (POST /api/leases/release), and shows the cost in flight
// against the limit (a Peek, GET /api/leases/state, refreshed live) in
// its list and its chart. A lease's ID is a secret (whoever has it can
// release the lease): the page shows only its first 8 digits.
"use strict";

const leasesView = (() => {
  let limit = null;
  let seq = 0;
  const held = []; // { lease, expiresAt, row }
  const chart = liveChart("lease-chart", "leases", { level: "in flight", allowed: "acquired", denied: "denied" }, () => limit);

  const short = (id) => id.slice(0, 8) + "…";

  // log lists one event: kind is the row's class and tag.
  function log(kind, tag, text) {
    const li = document.createElement("li");
    li.className = kind;
    const t = document.createElement("span");
    t.className = "tag";
    t.textContent = tag;
    li.append(t, text);
    $("lease-log").prepend(li);
  }

  function note(text) {
    const li = document.createElement("li");
    li.className = "note";
    li.textContent = "— " + text;
    $("lease-log").prepend(li);
  }

  // answer reads a JSON answer, or a failure to get one, as { res, d, failure }.
  async function answer(promise) {
    let res = null, d = {}, failure = "";
    try {
      res = await promise;
      try {
        d = await res.json();
      } catch (e) {
        d = { error: "the answer is not JSON" };
      }
    } catch (e) {
      failure = "no answer: " + e.message;
    }
    return { res, d, failure };
  }

  const errorText = ({ res, d, failure }) => res ? `HTTP ${res.status}: ${d.error || res.statusText}` : failure;

  async function acquire() {
    const key = $("lease-key").value;
    const n = Number($("lease-cost").value) || 1;
    const id = ++seq;
    const a = await answer(fetch("/api/leases?n=" + n, { method: "POST", headers: { "X-Demo-Key": key } }));
    const { res, d } = a;
    if (res && !d.error && res.status === 200 && d.lease) {
      const h = { lease: d.lease, expiresAt: Date.now() + d.ttl_ms, row: null };
      held.push(h);
      log("allowed", "ACQUIRED", ` #${id} key=${key} cost=${n} lease ${short(d.lease.id)} in flight ${d.in_flight} / ${d.limit}, expires in ${fmtMs(d.ttl_ms)}`);
      chart.decision("allowed", d.in_flight);
    } else if (res && !d.error && res.status === 429) {
      log("denied", "DENIED", ` #${id} key=${key} cost=${n} in flight ${d.in_flight} / ${d.limit}, retry after ${fmtMs(d.retry_after_ms || 0)} (Retry-After: ${res.headers.get("Retry-After")})`);
      chart.decision("denied", d.in_flight);
    } else {
      log("error", "ERROR", ` #${id} acquire key=${key} cost=${n} ` + errorText(a));
      chart.decision("error");
    }
    render();
    await refresh();
  }

  async function release(h) {
    const { key, n, id } = h.lease;
    const a = await answer(fetch("/api/leases/release", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key, n, id }),
    }));
    const { res, d } = a;
    if (res && res.status === 200 && d.released === true) {
      log("released", "RELEASED", ` lease ${short(id)} key=${key} cost=${n}`);
    } else if (res && res.status === 200 && d.released === false) {
      log("notlive", "NOT LIVE", ` lease ${short(id)} key=${key} cost=${n}: ${d.why}`);
    } else {
      log("error", "ERROR", ` release of lease ${short(id)} key=${key} ` + errorText(a));
      // A lease of the server's may still be held: keep it listed, to
      // try again. A forged one is dropped.
      if (h.expiresAt > 0) {
        await refresh();
        return;
      }
    }
    held.splice(held.indexOf(h), 1);
    render();
    await refresh();
  }

  async function releaseAll() {
    for (const h of [...held]) await release(h);
  }

  // forge releases a lease the server never issued: a random ID on the
  // panel's key, which frees nothing.
  async function forge() {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    const id = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
    const h = { lease: { key: $("lease-key").value, n: 1, id }, expiresAt: 0, row: null };
    held.push(h); // release takes it out again
    await release(h);
  }

  // render lists the leases held, with the time each has left.
  function render() {
    const body = $("leases").querySelector("tbody");
    const now = Date.now();
    for (const h of held) {
      if (!h.row) {
        h.row = document.createElement("tr");
        const b = document.createElement("button");
        b.textContent = "Release";
        b.className = "release";
        b.addEventListener("click", () => release(h));
        h.row.append(...[short(h.lease.id), h.lease.key, String(h.lease.n), ""].map((s) => {
          const td = document.createElement("td");
          td.textContent = s;
          return td;
        }), document.createElement("td"));
        h.row.cells[4].append(b);
      }
      const left = h.expiresAt - now;
      h.row.className = left > 0 ? "held" : "expired";
      h.row.cells[3].textContent = left > 0 ? fmtSeconds(left) : "expired (release says so)";
    }
    const listed = held.filter((h) => h.expiresAt > 0);
    // Rows move only when the list changed: a row re-inserted under the
    // pointer could lose a click on its button.
    const rows = listed.map((h) => h.row);
    if (rows.length !== body.children.length || rows.some((r, i) => body.children[i] !== r)) body.replaceChildren(...rows);
    $("no-leases").hidden = listed.length > 0;
  }

  const fmtSeconds = (ms) => (ms / 1000).toFixed(1) + " s";

  async function refresh() {
    try {
      const d = await api("GET", "/api/leases/state?key=" + encodeURIComponent($("lease-key").value));
      limit = d.limit;
      $("lease-state").textContent = `${d.in_flight} / ${d.limit} in flight`;
      $("lease-state").classList.remove("unavailable");
      $("lease-state-detail").classList.remove("error");
      $("lease-state-detail").textContent = d.allowed
        ? `room for ${d.remaining} more; all expire in ${fmtMs(d.reset_after_ms)} unless released`
        : `full: the next acquire is denied, the oldest lease expires in ${fmtMs(d.retry_after_ms)}`;
      chart.level(d.in_flight);
    } catch (e) {
      chart.level(null);
      $("lease-state").textContent = "unavailable";
      $("lease-state").classList.add("unavailable");
      $("lease-state-detail").classList.add("error");
      $("lease-state-detail").textContent = e.message;
    }
  }

  async function loadConfig() {
    const c = await api("GET", "/api/leases/config");
    $("lease-limit").value = c.limit;
    $("lease-ttl").value = c.ttl_ms;
    limit = c.limit;
  }

  async function applyConfig() {
    const cfg = { limit: Number($("lease-limit").value), ttl_ms: Number($("lease-ttl").value) };
    $("lease-config-error").textContent = "";
    try {
      const c = await api("PUT", "/api/leases/config", cfg);
      limit = c.limit;
      // The old limiter's leases free nothing in the new one; they expire.
      for (const h of held) h.row && h.row.remove();
      held.length = 0;
      render();
      note(`concurrency limiter switched to limit ${c.limit}, TTL ${fmtMs(c.ttl_ms)}; nothing in flight`);
      await refresh();
    } catch (e) {
      $("lease-config-error").textContent = e.message;
    }
  }

  function start() {
    chart.create();
    $("acquire").addEventListener("click", acquire);
    $("release-all").addEventListener("click", releaseAll);
    $("forge").addEventListener("click", forge);
    $("lease-apply").addEventListener("click", applyConfig);
    $("lease-clear").addEventListener("click", () => { $("lease-log").innerHTML = ""; seq = 0; chart.clear(); });
    render();
    loadConfig().then(refresh).catch((e) => { $("lease-config-error").textContent = e.message; });
    setInterval(refresh, 500);
    setInterval(render, 200);
  }

  return { start };
})();
