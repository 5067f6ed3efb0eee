// ratekit demo page: the side-by-side view. The server drives a traffic
// pattern through every algorithm on a simulated clock (GET /api/compare);
// this charts each algorithm's decisions per bin and level, on one scale.
"use strict";

const compareView = (() => {
  let meta = null;

  async function load() {
    meta = await api("GET", "/api/patterns");
    const box = $("patterns");
    for (const p of meta.patterns) {
      const b = document.createElement("button");
      b.id = "pattern-" + p.name;
      b.dataset.pattern = p.name;
      b.textContent = p.title;
      b.addEventListener("click", () => show(p.name));
      box.appendChild(b);
    }
    await show(meta.patterns[0].name);
  }

  // windowLines draws a dashed line at every window boundary.
  function windowLines(u) {
    const ctx = u.ctx, { top, height } = u.bbox, w = meta.window_ms / 1000;
    ctx.save();
    ctx.strokeStyle = "#8a8f99";
    ctx.setLineDash([5, 4]);
    for (let s = w; s < meta.span_ms / 1000; s += w) {
      const px = u.valToPos(s, "x", true);
      ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, top + height); ctx.stroke();
    }
    ctx.restore();
  }

  async function show(name) {
    $("compare-error").textContent = "";
    let c;
    try {
      c = await api("GET", "/api/compare?pattern=" + encodeURIComponent(name));
    } catch (e) {
      $("compare-error").textContent = e.message;
      return;
    }
    for (const b of $("patterns").querySelectorAll("button")) b.classList.toggle("selected", b.dataset.pattern === name);
    $("pattern-doc").textContent = c.pattern.doc + ".";
    const grid = $("compare");
    for (const old of demo.charts.compare) old.plot.destroy();
    demo.charts.compare = [];
    grid.innerHTML = "";
    grid.dataset.pattern = name;
    // One scale for all, so that heights compare across algorithms.
    let top = 1;
    for (const a of c.algorithms) top = Math.max(top, ...a.allowed, ...a.denied, ...a.remaining);
    // Bars centred on their bin.
    const x = c.t.map((t) => t + c.bin_ms / 2000);
    for (const a of c.algorithms) {
      const card = document.createElement("div");
      card.className = "cmp";
      card.dataset.algorithm = a.name;
      const h = document.createElement("h3");
      h.textContent = a.title;
      h.title = a.doc;
      const facts = document.createElement("p");
      facts.className = "facts";
      facts.textContent = `${a.total_allowed} allowed, ${a.total_denied} denied, at most ${a.peak} in any ${c.window_ms / 1000} s`;
      const params = document.createElement("p");
      params.className = "params";
      params.textContent = a.params.map((p) => `${p.name}=${p.value}`).join(" ");
      const chart = document.createElement("div");
      chart.className = "chart";
      card.append(h, facts, params, chart);
      grid.appendChild(card);
      const plot = new uPlot({
        width: chartWidth(chart),
        height: 170,
        legend: { show: false },
        scales: { x: { time: false, range: [0, meta.span_ms / 1000] }, y: { range: [0, Math.ceil(top * 1.1)] } },
        axes: [{ values: (u, vals) => vals.map((v) => v + " s") }, { size: 30 }],
        series: [{}, levelSeries(), ...decisionSeries()],
        hooks: { draw: [windowLines] },
      }, [x, a.remaining, a.allowed, a.denied], chart);
      demo.charts.compare.push({ name: a.name, plot });
    }
  }

  return { load, show };
})();
