// ratekit demo page: talks to the demo's JSON API (see cmd/demo/server.go).
"use strict";

const $ = (id) => document.getElementById(id);
let algorithms = [];
let seq = 0;
let allowedCount = 0;
let deniedCount = 0;
let errorCount = 0;

// api calls the JSON API; an answer that is not 2xx throws its error.
async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  let data;
  try {
    data = await res.json();
  } catch (e) {
    throw new Error(`HTTP ${res.status}: the answer is not JSON`);
  }
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${data.error || res.statusText}`);
  return data;
}

function renderParams(name, values) {
  const algo = algorithms.find((a) => a.name === name);
  const box = $("params");
  box.innerHTML = "";
  for (const p of algo.params) {
    const label = document.createElement("label");
    label.textContent = p.label + " ";
    const input = document.createElement("input");
    input.type = "number";
    input.min = "1";
    input.id = "param-" + p.name;
    input.dataset.param = p.name;
    input.value = values && values[p.name] !== undefined ? values[p.name] : p.default;
    label.appendChild(input);
    box.appendChild(label);
  }
}

async function loadConfig() {
  const meta = await api("GET", "/api/algorithms");
  algorithms = meta.algorithms;
  $("store").textContent = meta.store;
  const select = $("algorithm");
  for (const a of algorithms) {
    const o = document.createElement("option");
    o.value = a.name;
    o.textContent = a.title;
    select.appendChild(o);
  }
  const cfg = await api("GET", "/api/config");
  select.value = cfg.algorithm;
  renderParams(cfg.algorithm, cfg.params);
  select.addEventListener("change", () => renderParams(select.value));
}

async function applyConfig() {
  const params = {};
  for (const input of $("params").querySelectorAll("input")) {
    params[input.dataset.param] = Number(input.value);
  }
  $("config-error").textContent = "";
  try {
    await api("PUT", "/api/config", { algorithm: $("algorithm").value, params });
    addNote("limiter switched to " + $("algorithm").selectedOptions[0].textContent + " " + JSON.stringify(params));
    await refreshState();
  } catch (e) {
    $("config-error").textContent = e.message;
  }
}

function addNote(text) {
  const li = document.createElement("li");
  li.className = "note";
  li.textContent = "— " + text;
  $("log").prepend(li);
}

function fmtMs(ms) {
  return ms >= 1000 ? (ms / 1000).toFixed(3) + " s" : ms.toFixed(1) + " ms";
}

// sendOne sends one request to the limited endpoint and lists it: ALLOWED
// (200) or DENIED (429) only when the limiter decided it; anything else,
// a store failure (503) included, is an ERROR with its message.
async function sendOne() {
  const key = $("key").value;
  const n = Number($("cost").value) || 1;
  const id = ++seq;
  let res = null;
  let d = {};
  let failure = "";
  try {
    res = await fetch("/api/limited?n=" + n, { headers: { "X-Demo-Key": key, Accept: "application/json" } });
    try {
      d = await res.json();
    } catch (e) {
      d = { error: "the answer is not JSON" };
    }
  } catch (e) {
    failure = "no answer: " + e.message;
  }
  let kind = "error";
  if (res && !d.error && res.status === 200) kind = "allowed";
  if (res && !d.error && res.status === 429) kind = "denied";
  const li = document.createElement("li");
  li.className = kind;
  const tag = document.createElement("span");
  tag.className = "tag";
  tag.textContent = kind.toUpperCase();
  let text = ` #${id} key=${key} cost=${n} `;
  if (kind === "error") {
    errorCount++;
    text += res ? `HTTP ${res.status}: ${d.error || res.statusText || "no decision"}` : failure;
  } else {
    if (kind === "allowed") allowedCount++; else deniedCount++;
    text += `remaining=${d.remaining}` +
      (kind === "allowed" ? "" : ` retry after ${fmtMs(d.retry_after_ms || 0)}`) +
      ` reset after ${fmtMs(d.reset_after_ms || 0)}`;
  }
  li.append(tag, text);
  $("log").prepend(li);
  live.decision(kind, kind === "error" ? undefined : d.remaining);
  const names = ["RateLimit-Policy", "RateLimit", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"];
  $("headers").textContent = res
    ? `HTTP ${res.status}\n` + names.filter((h) => res.headers.get(h) !== null).map((h) => `${h}: ${res.headers.get(h)}`).join("\n")
    : failure;
  $("summary").textContent = `${allowedCount} allowed, ${deniedCount} denied` + (errorCount ? `, ${errorCount} failed (no decision)` : "");
}

async function sendBurst() {
  const count = Math.min(Number($("burst").value) || 1, 500);
  for (let i = 0; i < count; i++) await sendOne();
  await refreshState();
}

async function refreshState() {
  try {
    const s = await api("GET", "/api/state?key=" + encodeURIComponent($("key").value));
    const d = s.decision;
    $("state").textContent = `${d.remaining} / ${d.limit}`;
    $("state").classList.remove("unavailable");
    $("state-detail").classList.remove("error");
    $("state-detail").textContent = `${s.meaning}; next request ${d.allowed ? "would pass" : "would be denied, retry in " + fmtMs(d.retry_after_ms)}; back to full in ${fmtMs(d.reset_after_ms)}`;
    live.level(d.remaining);
  } catch (e) {
    live.level(null);
    $("state").textContent = "unavailable";
    $("state").classList.add("unavailable");
    $("state-detail").classList.add("error");
    $("state-detail").textContent = e.message;
  }
}

$("apply").addEventListener("click", applyConfig);
$("send-one").addEventListener("click", async () => { await sendOne(); await refreshState(); });
$("send-burst").addEventListener("click", sendBurst);
$("clear").addEventListener("click", () => { $("log").innerHTML = ""; seq = 0; allowedCount = 0; deniedCount = 0; errorCount = 0; $("summary").textContent = ""; live.clear(); });
live.create();
loadConfig().then(refreshState);
setInterval(refreshState, 500);
leasesView.start();
compareView.load().catch((e) => { $("compare-error").textContent = e.message; });
