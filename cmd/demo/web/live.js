// ratekit demo page: the live charts, fed by app.js and leases.js:
// answers per second (allowed, denied, and failed: no decision) and a
// level (the key's Remaining, or the cost in flight), since the page
// opened or was cleared: the span shown starts there and grows to a
// minute, then scrolls. A chart holds the last 10 minutes.
"use strict";

// liveChart returns a live chart drawn in the element of id elId and kept
// as demo.charts[name]; labels name its series (level, allowed, denied),
// and ceiling, when given, returns a level to draw as a dashed line (the
// limit), or null.
function liveChart(elId, name, labels, ceiling) {
  const span = 60; // seconds shown at most
  const keep = 600; // seconds held: demo.charts[name].data, which the browser test sums
  const x = [], allowed = [], denied = [], failed = [], level = [];
  let lastLevel = null;
  let plot = null;

  function create() {
    extend(); // the first second: the page opening
    const el = document.getElementById(elId);
    const top = (u, min, max) => {
      const [lo, hi] = zeroBased(u, min, max);
      const c = ceiling ? ceiling() : null;
      return [lo, c === null ? hi : Math.max(hi, c + 1)];
    };
    plot = new uPlot({
      width: chartWidth(el),
      height: 240,
      scales: { x: { time: true, range: xRange }, y: { range: top } },
      // Whole seconds on the axis, even while the span is a few seconds.
      axes: [{ incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600] }, {}],
      // The level first, so that the bars are drawn over it.
      series: [
        {},
        levelSeries(labels.level),
        ...decisionSeries(labels.allowed, labels.denied),
        { label: "failed", stroke: colors.failed, fill: colors.failed, paths: () => null, points: { show: true, size: 9, fill: colors.failed } },
      ],
      hooks: { draw: ceiling ? [ceilingLine] : [] },
    }, [x, level, allowed, denied, failed], el);
    demo.charts[name] = plot;
  }

  // ceilingLine draws the ceiling as a dashed line across the chart.
  function ceilingLine(u) {
    const c = ceiling();
    if (c === null) return;
    const ctx = u.ctx, { left, width } = u.bbox, py = u.valToPos(c, "y", true);
    ctx.save();
    ctx.strokeStyle = colors.denied;
    ctx.setLineDash([5, 4]);
    ctx.beginPath(); ctx.moveTo(left, py); ctx.lineTo(left + width, py); ctx.stroke();
    ctx.restore();
  }

  // xRange is the seconds since the first one held (the page opened or
  // was cleared), at most the last span of them: a window that grows,
  // then scrolls once it is full. (From x itself: uPlot widens a single
  // point to a day before it asks.)
  function xRange() {
    const last = x.length ? x[x.length - 1] : Math.floor(Date.now() / 1000);
    const first = x.length ? x[0] : last;
    return [Math.max(first, last - span + 1) - 0.5, last + 0.5];
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
    // decision counts one answer: kind is "allowed", "denied" or
    // "error"; value is the level it gave, when there was a decision.
    decision(kind, value) {
      const i = extend();
      if (kind === "allowed") allowed[i]++;
      else if (kind === "denied") denied[i]++;
      else failed[i] = (failed[i] || 0) + 1;
      if (value !== undefined) lastLevel = level[i] = value;
      draw();
    },
    // level records the level; null when it could not be read.
    level(value) {
      const i = extend();
      lastLevel = level[i] = value;
      draw();
    },
    // clear forgets the decisions and the level so far.
    clear() {
      for (const a of [x, allowed, denied, failed, level]) a.length = 0;
      extend();
      draw();
    },
  };
}

// live is the rate-limited endpoint's chart: its decisions and the key's
// Remaining.
const live = liveChart("live-chart", "live", { level: "remaining", allowed: "allowed", denied: "denied" });
