// ratekit demo page: the live chart, fed by app.js: requests decided per
// second (allowed, denied, and failed: no decision) and the key's level
// (Remaining, from each decision and each Peek), since the page opened or
// was cleared, up to the last 10 minutes.
"use strict";

const live = (() => {
  const span = 60; // seconds shown at least
  const keep = 600; // seconds shown at most
  const x = [], allowed = [], denied = [], failed = [], level = [];
  let lastLevel = null;
  let plot = null;

  function create() {
    const el = document.getElementById("live-chart");
    plot = new uPlot({
      width: chartWidth(el),
      height: 240,
      scales: { x: { time: true, range: xRange }, y: { range: zeroBased } },
      // The level first, so that the bars are drawn over it.
      series: [
        {},
        levelSeries(),
        ...decisionSeries(),
        { label: "failed", stroke: colors.failed, fill: colors.failed, paths: () => null, points: { show: true, size: 9, fill: colors.failed } },
      ],
    }, [x, level, allowed, denied, failed], el);
    demo.charts.live = plot;
  }

  // xRange is every second kept, and never less than span: a window
  // that scrolls once it is full. (From x itself: uPlot widens a single
  // point to a day before it asks.)
  function xRange() {
    const last = x.length ? x[x.length - 1] : Math.floor(Date.now() / 1000);
    const first = x.length ? x[0] : last;
    return [Math.min(first, last - span + 1) - 0.5, last + 0.5];
  }

  // extend adds the seconds up to now, with no decisions yet and the last
  // level, and drops those older than keep; it returns now's index.
  function extend() {
    const now = Math.floor(Date.now() / 1000);
    let next = x.length ? x[x.length - 1] + 1 : now;
    for (; next <= now; next++) {
      x.push(next); allowed.push(0); denied.push(0); failed.push(null); level.push(lastLevel);
    }
    const drop = x.length - keep;
    if (drop > 0) for (const a of [x, allowed, denied, failed, level]) a.splice(0, drop);
    return x.length - 1;
  }

  function draw() {
    if (plot) plot.setData([x, level, allowed, denied, failed]);
  }

  return {
    create,
    // decision counts one answer of the limited endpoint: kind is
    // "allowed", "denied" or "error"; remaining is the decision's, when
    // there was one.
    decision(kind, remaining) {
      const i = extend();
      if (kind === "allowed") allowed[i]++;
      else if (kind === "denied") denied[i]++;
      else failed[i] = (failed[i] || 0) + 1;
      if (remaining !== undefined) lastLevel = level[i] = remaining;
      draw();
    },
    // level records the key's Remaining; null when it could not be read.
    level(remaining) {
      const i = extend();
      lastLevel = level[i] = remaining;
      draw();
    },
    // clear forgets the decisions and the level so far.
    clear() {
      for (const a of [x, allowed, denied, failed, level]) a.length = 0;
      extend();
      draw();
    },
  };
})();
