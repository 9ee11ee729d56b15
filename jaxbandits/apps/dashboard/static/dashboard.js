// The dashboard of `jaxbandits serve` (docs/online.md): polls /series, /estimates and /config
// and draws them with uPlot. Every name or value from the server reaches the page as text
// (textContent, uPlot labels): never as HTML.
(function () {
  "use strict";
  const query = new URLSearchParams(location.search);
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get("token") || query.get("token");
  const pollMs = Math.max(200, Number(query.get("poll")) || 1000);
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf"];
  const color = (i) => palette[i % palette.length];
  const charts = {};
  let updates = 0;

  async function get(path) {
    const r = await fetch(path, { headers: headers, cache: "no-store" });
    if (!r.ok) throw new Error(path + ": HTTP " + r.status);
    return r.json();
  }

  const fmt = (x, d) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
  const short = (s) => (s.length > 24 ? s.slice(0, 23) + "…" : s);

  function cell(tr, value) {
    const td = document.createElement("td");
    td.textContent = value;
    tr.appendChild(td);
  }

  function width(id) {
    const el = document.getElementById(id);
    return Math.max(240, el.clientWidth || 480);
  }

  // One uPlot per element; rebuilt when the set of series changes, otherwise fed new data.
  function draw(id, key, makeOpts, data) {
    const el = document.getElementById(id);
    const old = charts[id];
    if (old && old.key === key) {
      old.plot.setData(data);
      return;
    }
    if (old) old.plot.destroy();
    const opts = makeOpts();
    opts.width = width(id);
    opts.height = opts.height || 220;
    charts[id] = { key: key, plot: new uPlot(opts, data, el) };
  }

  // y axes wide enough for their tick labels (30,000 and its axis label do not overlap)
  const fit = (axis) => Object.assign({
    size: (u, values) => 24 + 7 * Math.max(3, ...(values || []).map((v) => String(v).length)),
  }, axis);

  function timeChart(id, series, data, axes) {
    const key = series.map((s) => s.label).join("\u0000");
    draw(id, key, () => ({
      series: [{}].concat(series),
      axes: [{}].concat((axes || [{}]).map(fit)),
      scales: { x: { time: true } },
      legend: { live: false },
    }), data);
  }

  function renderArms(est) {
    const tbody = document.querySelector("#arms tbody");
    const rows = [];
    for (const a of est.arms) {
      const tr = document.createElement("tr");
      tr.className = "arm";
      cell(tr, a.name);
      cell(tr, String(a.decisions));
      cell(tr, a.share === null ? "–" : (100 * a.share).toFixed(1) + "%");
      cell(tr, String(a.events));
      cell(tr, fmt(a.estimate, 4));
      cell(tr, fmt(a.rate, 4));
      cell(tr, a.lo === null ? "–" : "[" + fmt(a.lo, 4) + ", " + fmt(a.hi, 4) + "]");
      cell(tr, String(a.pending));
      rows.push(tr);
    }
    tbody.replaceChildren.apply(tbody, rows);
  }

  function renderEstimates(est) {
    const arms = est.arms;
    const xs = arms.map((_, i) => i);
    const data = [xs, arms.map((a) => a.rate), arms.map((a) => a.lo), arms.map((a) => a.hi)];
    const names = arms.map((a) => a.name);
    const bars = (u) => {  // the interval of each arm: a vertical bar from lo to hi
      const ctx = u.ctx;
      ctx.save();
      ctx.lineWidth = 3 * devicePixelRatio;
      u.data[0].forEach((x, i) => {
        const lo = u.data[2][i], hi = u.data[3][i];
        if (lo === null || hi === null) return;
        const px = u.valToPos(x, "x", true);
        ctx.strokeStyle = color(i);
        ctx.beginPath();
        ctx.moveTo(px, u.valToPos(lo, "y", true));
        ctx.lineTo(px, u.valToPos(hi, "y", true));
        ctx.stroke();
      });
      ctx.restore();
    };
    draw("c-estimates", names.join("\u0000"), () => ({
      series: [{ label: "arm", value: (u, v) => (v === null ? "–" : names[v]) },
        { label: "rate", stroke: "#1d2330", paths: () => null, points: { show: true, size: 9, fill: "#1d2330" } },
        { label: "95% low", stroke: "#999", paths: () => null, points: { show: true, size: 4 } },
        { label: "95% high", stroke: "#999", paths: () => null, points: { show: true, size: 4 } }],
      scales: {
        x: { time: false, range: [-0.5, arms.length - 0.5] },
        y: { range: (u, lo, hi) => [0, Math.max(hi || 0, 0.01) * 1.1] },
      },
      axes: [{ splits: () => xs, values: (u, vals) => vals.map((v) => (v in names ? short(names[v]) : "")) },
        fit({ label: "rate" })],
      hooks: { draw: [bars] },
      legend: { live: false },
    }), data);
    const methods = Array.from(new Set(arms.map((a) => a.method)));
    document.getElementById("estimates-method").textContent = "interval: " + methods.join("; ");
  }

  function renderDelay(est) {
    const panel = document.getElementById("p-delay");
    const d = est.delay;
    const note = document.getElementById("delay-note");
    if (!d) {
      panel.classList.add("hidden");
      return;
    }
    panel.classList.remove("hidden");
    if (d.source === "posterior") {
      timeless("c-delay", [d.ages, d.seen, d.expected_seen], [
        { label: "delays seen", stroke: "#1f77b4", fill: "rgba(31,119,180,0.15)" },
        { label: "expected from the fitted law", stroke: "#d62728", dash: [6, 3] }], "delay (rounds)", "conversions");
      note.textContent = "Seen: the delays of the conversions the policy has seen. Expected: the fitted law at the " +
        "posterior mode times each arm's rate and its decisions old enough to show that delay.";
    } else {
      timeless("c-delay", [d.ages, d.pmf], [{ label: "configured law P(D = d)", stroke: "#d62728" }],
        "delay (rounds)", "probability");
      note.textContent = "The delay law the config gives the policy (not fitted).";
    }
  }

  function timeless(id, data, series, xlabel, ylabel) {
    draw(id, series.map((s) => s.label).join("\u0000"), () => ({
      series: [{ label: xlabel }].concat(series),
      scales: { x: { time: false } },
      axes: [{ label: xlabel }, fit({ label: ylabel })],
      legend: { live: false },
    }), data);
  }

  function renderSeries(s, est) {
    const t = s.t;
    const arms = s.arms;
    const armSeries = arms.map((a, i) => ({ label: a, stroke: color(i), width: 2 }));
    timeChart("c-decisions", armSeries, [t].concat(arms.map((a) => s.decisions[a])), [{ label: "decisions" }]);
    timeChart("c-share", armSeries, [t].concat(arms.map((a) => s.share[a])), [{ label: "share" }]);
    const arrived = s.counters.accepted;
    const expected = s.expected_conversions;
    timeChart("c-conversions", [
      { label: "arrived", stroke: "#2ca02c", width: 2 },
      { label: "arrived + still expected", stroke: "#2ca02c", dash: [6, 3] },
      { label: "still expected (right)", stroke: "#ff7f0e", width: 2, scale: "n" },
      { label: "pending decisions (right)", stroke: "#7f7f7f", scale: "n" }],
      [t, arrived, arrived.map((x, i) => (expected[i] === null ? null : x + expected[i])), expected, s.pending],
      [{ label: "conversions arrived" }, { scale: "n", side: 1, label: "pending", grid: { show: false } }]);
    document.getElementById("conversions-note").textContent = est.expected_conversions === null
      ? "No delay law for this policy: only the pending decisions are shown."
      : "Still expected: each pending decision's chance to convert within the window, from the rate and delay law.";
    const c = s.counters;
    const lost = t.map((_, i) => c.unknown[i] + c.outside_window[i] + c.expired[i] + c.invalid[i]);
    timeChart("c-events", [
      { label: "lost (all)", stroke: "#d62728", width: 2 },
      { label: "unknown", stroke: "#9467bd" },
      { label: "outside window", stroke: "#8c564b" },
      { label: "expired", stroke: "#e377c2" },
      { label: "invalid", stroke: "#bcbd22" },
      { label: "duplicate", stroke: "#1f77b4", width: 2 }],
      [t, lost, c.unknown, c.outside_window, c.expired, c.invalid, c.duplicate], [{ label: "events (cumulative)" }]);
    timeChart("c-throughput", [
      { label: "decisions/s", stroke: "#1f77b4", width: 2 },
      { label: "latency p50 ms", stroke: "#2ca02c", scale: "ms" },
      { label: "latency p99 ms", stroke: "#d62728", scale: "ms" }],
      [t, s.decisions_per_s, s.latency_ms.p50, s.latency_ms.p99],
      [{ label: "decisions/s" }, { scale: "ms", side: 1, label: "ms", grid: { show: false } }]);
  }

  let configShown = false;

  async function tick() {
    const status = document.getElementById("status");
    try {
      const [s, est] = await Promise.all([get("series"), get("estimates")]);
      if (!configShown) {
        const cfg = await get("config");
        document.getElementById("config").textContent = JSON.stringify(cfg.config, null, 2);
        document.getElementById("policy").textContent = cfg.policy + " on " + cfg.channel;
        configShown = true;
      }
      renderArms(est);
      renderEstimates(est);
      renderDelay(est);
      renderSeries(s, est);
      status.classList.remove("error");
      status.textContent = "round " + est.round + " · " + est.decisions + " decisions · " + est.converted +
        " conversions · log " + est.log_seq + " · updated " + new Date().toLocaleTimeString();
      updates += 1;
      document.body.dataset.updates = String(updates);
    } catch (err) {
      status.classList.add("error");
      status.textContent = String(err.message || err);
      console.error("dashboard update failed:", err);
    }
    setTimeout(tick, pollMs);
  }

  window.addEventListener("resize", () => {
    for (const id in charts) charts[id].plot.setSize({ width: width(id), height: charts[id].plot.height });
  });
  tick();
})();
