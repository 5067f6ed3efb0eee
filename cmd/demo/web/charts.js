// ratekit demo page: what its charts share. The charts are uPlot
// (web/uplot, embedded); every chart the page draws is kept in demo.charts,
// so that a test can read the data it holds.
"use strict";

const demo = { charts: { live: null, leases: null, compare: [] } };
window.demo = demo;

const colors = { allowed: "#1e7b34", denied: "#b3261e", failed: "#c77c00", level: "#3c5ccf" };

// decisionSeries are bars of allowed (left of x) and denied (right of x)
// counts, labelled as given.
function decisionSeries(allowed = "allowed", denied = "denied") {
  const bars = (align) => uPlot.paths.bars({ size: [0.45, 18], align });
  return [
    { label: allowed, stroke: colors.allowed, fill: colors.allowed + "cc", width: 1, paths: bars(-1), points: { show: false } },
    { label: denied, stroke: colors.denied, fill: colors.denied + "cc", width: 1, paths: bars(1), points: { show: false } },
  ];
}

// levelSeries is a level (the key's Remaining, by default), held until the
// next value.
function levelSeries(label = "remaining") {
  return { label, stroke: colors.level, width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } };
}

// chartWidth is the width a chart may take in el.
function chartWidth(el) {
  return Math.max(200, Math.floor(el.clientWidth));
}

// zeroBased is a y range from 0 to a little over the largest value.
function zeroBased(u, min, max) {
  return [0, Math.max(1, Math.ceil((max || 0) * 1.15))];
}

window.addEventListener("resize", () => {
  const all = [demo.charts.live, demo.charts.leases, ...demo.charts.compare.map((c) => c.plot)].filter(Boolean);
  for (const u of all) u.setSize({ width: chartWidth(u.root.parentElement), height: u.height });
});
