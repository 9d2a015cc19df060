// argo-doctor HTML report: draws the timeline from the JSON blob in #report-data and wires the buttons.
// Texts go into the page through textContent only; nothing is fetched.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = { critical: "#b3001b", high: "#d9480f", medium: "#c99700", low: "#1c7ed6", info: "#868e96" };
  var RANK = { critical: 4, high: 3, medium: 2, low: 1, info: 0 };
  var data = JSON.parse(document.getElementById("report-data").textContent);

  // -- copy buttons, "show all", expand/collapse, print ------------------------------------------------
  function copyText(text, button) {
    function done() { button.textContent = "Copied"; button.classList.add("copied");
      setTimeout(function () { button.textContent = "Copy"; button.classList.remove("copied"); }, 1500); }
    function fallback() {
      var area = document.createElement("textarea");
      area.value = text; area.setAttribute("readonly", ""); area.className = "offscreen";
      document.body.appendChild(area); area.select();
      try { document.execCommand("copy"); done(); } catch (e) { button.textContent = "Select and copy"; }
      document.body.removeChild(area);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else { fallback(); }
  }
  function allDetails() { return document.querySelectorAll("details"); }
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest("button");
    if (!button) { return; }
    if (button.classList.contains("copy")) {
      copyText(button.closest(".code").querySelector("pre").textContent, button);
    } else if (button.classList.contains("show-all")) {
      var more = button.previousElementSibling.querySelector("tbody.more");
      more.hidden = !more.hidden;
      button.textContent = more.hidden ? button.textContent.replace(/^show fewer/, "show all")
                                       : button.textContent.replace(/^show all/, "show fewer");
    } else if (button.dataset.act === "expand-all" || button.dataset.act === "collapse-all") {
      var open = button.dataset.act === "expand-all";
      allDetails().forEach(function (d) { d.open = open; });
    }
  });
  window.addEventListener("beforeprint", function () {
    allDetails().forEach(function (d) { d.open = true; });
    document.querySelectorAll("tbody.more").forEach(function (t) { t.hidden = false; });
  });

  // -- the timeline --------------------------------------------------------------------------------
  var chart = document.getElementById("chart");
  if (!chart || !data.entries.length) { return; }
  var tip = document.getElementById("tip");
  var entries = data.entries, lanes = data.lanes, edges = data.edges;
  var laneOf = {}; lanes.forEach(function (name, i) { laneOf[name] = i; });
  var TOP = 40, LANE = 38, RIGHT = 16, BOTTOM = 8, LABEL_MIN = 90, LABEL_MAX = 300;
  var tMin = entries[0].t, tMax = entries[0].t;
  entries.forEach(function (e) { tMin = Math.min(tMin, e.t); tMax = Math.max(tMax, e.t); });
  var pad = Math.max(1000, (tMax - tMin) * 0.04);
  var T0 = tMin - pad, T1 = tMax + pad;
  var asked = askedWindow();  // the window of `timeline --around --window` is inside the domain, however few facts
  if (asked) { T0 = Math.min(T0, asked[0]); T1 = Math.max(T1, asked[1]); }
  var SPAN = T1 - T0;
  var width = 0, plotW = 0, k = 1, off = 0, drawnOff = 0;  // drawnOff: the pan the marks were drawn at
  var height = TOP + lanes.length * LANE + BOTTOM;

  function askedWindow() {
    var centre = Date.parse(data.around || ""), w = durationMs(data.window);
    return isNaN(centre) || w === null ? null : [centre - w / 2, centre + w / 2];
  }
  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }
  function worst(entry) {
    var best = null;
    entry.findings.forEach(function (id) {
      var sev = data.severity[id];
      if (sev && (best === null || RANK[sev] > RANK[best])) { best = sev; }
    });
    return best;
  }
  function pad2(n, w) { var s = String(n); while (s.length < (w || 2)) { s = "0" + s; } return s; }
  function label(t, step) {
    var d = new Date(t);
    var day = pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate());
    var hm = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes());
    if (step >= 86400000) { return day; }
    if (step >= 60000) { return day + " " + hm; }
    if (step >= 1000) { return hm + ":" + pad2(d.getUTCSeconds()); }
    return hm + ":" + pad2(d.getUTCSeconds()) + "." + pad2(d.getUTCMilliseconds(), 3);
  }
  var STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5,
               36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5, 2592e6];
  // x in the plot group, whose translation is what was panned since the last draw: coordinates stay small however
  // far one zooms in (Chromium stops drawing SVG shapes millions of pixels away)
  function xOf(t) { return (t - T0) / SPAN * plotW * k - drawnOff; }
  function shift() { return "translate(" + (LABEL + drawnOff - off) + ",0)"; }
  function tOf(px) { return T0 + (px - LABEL + off) / (plotW * k) * SPAN; }  // px: x in the svg
  function visible() { return [tOf(LABEL), tOf(LABEL + plotW)]; }
  function clamp() {
    k = Math.min(Math.max(k, 1), Math.max(1, SPAN / Math.max(plotW, 1) * 20));
    off = Math.min(Math.max(off, 0), plotW * k - plotW);
  }
  function fmtGap(s) { return "+" + (Math.abs(s) >= 100 ? Math.round(s) : Math.round(s * 1000) / 1000) + " s"; }

  // the lane label column: as wide as the longest name, within bounds; a longer name is cut with an ellipsis and
  // shown whole in its tooltip
  var LABEL = LABEL_MAX, laneText = {};
  (function sizeLabels() {
    var probe = el("svg", { width: 10, height: 10 }, chart), longest = 0;
    lanes.forEach(function (name) {
      var text = el("text", { class: "lane-label" }, probe);
      text.textContent = name;
      if (text.getComputedTextLength() > LABEL_MAX - 16) {
        var cut = name;
        while (cut.length > 1 && text.getComputedTextLength() > LABEL_MAX - 16) {
          cut = cut.slice(0, -1); text.textContent = cut + "…";
        }
      }
      laneText[name] = text.textContent;
      longest = Math.max(longest, text.getComputedTextLength());
    });
    chart.removeChild(probe);
    LABEL = Math.min(LABEL_MAX, Math.max(LABEL_MIN, Math.ceil(longest) + 16));
  })();

  var svg, plot, axis, marks = [];
  function measure() { width = Math.max(chart.clientWidth, 700); plotW = width - LABEL - RIGHT; }
  function draw() {
    measure(); clamp();
    drawnOff = off;
    chart.textContent = "";
    svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                      "aria-label": "timeline of " + entries.length + " facts in " + lanes.length + " lanes" }, chart);
    var defs = el("defs", {}, svg);
    el("rect", { x: LABEL, y: 0, width: plotW, height: height }, el("clipPath", { id: "plot-clip" }, defs));
    Object.keys(COLORS).forEach(function (sev) {
      var marker = el("marker", { id: "arrow-" + sev, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                                  markerHeight: 7, orient: "auto-start-reverse" }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", fill: COLORS[sev] }, marker);
    });
    lanes.forEach(function (name, i) {
      el("rect", { class: "lane-bg" + (i % 2 ? " odd" : ""), x: 0, y: TOP + i * LANE, width: width, height: LANE },
         svg);
      var text = el("text", { class: "lane-label", x: 8, y: TOP + i * LANE + LANE / 2 + 4 }, svg);
      text.textContent = laneText[name];
      if (laneText[name] !== name) { el("title", {}, text).textContent = name; }
    });
    var clip = el("g", { "clip-path": "url(#plot-clip)" }, svg);
    axis = el("g", { class: "axis" }, clip);
    plot = el("g", { id: "plot", transform: shift() }, clip);
    drawAxis();
    drawEdges();
    drawMarks();
    drawGaps();
    var range = visible();
    document.getElementById("view-range").textContent =
      new Date(range[0]).toISOString() + " → " + new Date(range[1]).toISOString();
  }
  function drawAxis() {
    var range = visible(), want = (range[1] - range[0]) / Math.max(2, plotW / 130), step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) { if (STEPS[i] >= want) { step = STEPS[i]; break; } }
    for (var t = Math.ceil(range[0] / step) * step; t <= range[1]; t += step) {
      var x = LABEL + xOf(t) + drawnOff - off;
      var tick = el("g", { class: "tick" }, axis);
      el("line", { x1: x, x2: x, y1: 18, y2: height }, tick);
      el("text", { x: x + 3, y: 14 }, tick).textContent = label(t, step);
    }
  }
  function laneY(entry, i) { return TOP + laneOf[entry.component] * LANE + LANE / 2 + ((i % 3) - 1) * 6; }
  function drawMarks() {
    marks = [];
    entries.forEach(function (entry, i) {
      var sev = worst(entry);
      var mark = el("circle", { class: "mark", cx: xOf(entry.t), cy: laneY(entry, i), r: sev ? 6 : 4.5,
                                fill: sev ? COLORS[sev] : "#adb5bd", "data-i": i }, plot);
      marks.push(mark);
    });
  }
  var arrows = [];  // per edge, where its gap label would go: the curve's middle
  function drawEdges() {
    arrows = [];
    edges.forEach(function (edge) {
      var a = entries[edge.from], b = entries[edge.to];
      var x1 = xOf(a.t), y1 = laneY(a, edge.from), x2 = xOf(b.t), y2 = laneY(b, edge.to);
      var mx = (x1 + x2) / 2, my = (y1 + y2) / 2, bend = Math.min(LANE * 0.8, Math.max(10, Math.abs(x2 - x1) * 0.3));
      var same = a.component === b.component;
      var cx = same || Math.abs(x2 - x1) < 4 ? mx + (same ? 0 : 26) : mx;
      var cy = same ? Math.min(y1, y2) - bend : my;
      var color = COLORS[edge.severity] || COLORS.info;
      var g = el("g", { class: "chain-edge", "data-finding": edge.finding }, plot);
      el("title", {}, g).textContent = fmtGap(edge.gap) + " · " + (data.titles[edge.finding] || edge.finding);
      // shorten the end so that the arrowhead stops at the mark's edge
      var dx = x2 - cx, dy = y2 - cy, len = Math.sqrt(dx * dx + dy * dy) || 1;
      el("path", { class: "chain-arrow", stroke: color, "marker-end": "url(#arrow-" + (edge.severity || "info") + ")",
                   d: "M" + x1 + "," + y1 + " Q" + cx + "," + cy + " " + (x2 - dx / len * 7) + "," + (y2 - dy / len * 7)
                 }, g);
      arrows.push({ edge: edge, color: color, same: same, x: (x1 + 2 * cx + x2) / 4, y: (y1 + 2 * cy + y2) / 4 });
    });
  }
  function overlaps(a, b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  }
  // gap labels above the marks, each where it covers no mark and no other label: beside the curve's middle, or a
  // lane's height above or below it; a label with no such place is left out (its arrow's tooltip has the gap)
  function drawGaps() {
    var layer = el("g", { class: "gap-labels" }, plot), taken = [];
    marks.forEach(function (mark) {
      var x = +mark.getAttribute("cx"), r = +mark.getAttribute("r");
      if (x > -60 && x < plotW + 60) { taken.push({ x: x - r, y: +mark.getAttribute("cy") - r, width: 2 * r, height: 2 * r }); }
    });
    arrows.forEach(function (arrow) {
      var text = el("text", { class: "gap-label", fill: arrow.color, "data-edge": edges.indexOf(arrow.edge) }, layer);
      text.textContent = fmtGap(arrow.edge.gap);
      var w = text.getComputedTextLength(), spots = [];
      [0, -14, 14, -28, 28, -42, 42].forEach(function (dy) {
        var y = arrow.y + (arrow.same ? -5 : -3) + dy;
        (arrow.same ? [-w / 2, 6, -w - 6] : [5, -w - 5, -w / 2]).forEach(function (dx) {
          spots.push([arrow.x + dx, y]);
        });
      });
      var visibleX = arrow.x > 0 && arrow.x < plotW;
      var found = spots.some(function (spot) {
        var box = { x: spot[0] - 1, y: spot[1] - 10, width: w + 2, height: 13 };
        if (box.y < 20 || box.y + box.height > height) { return false; }
        if (visibleX && (box.x < 0 || box.x + box.width > plotW)) { return false; }
        if (taken.some(function (t) { return overlaps(t, box); })) { return false; }
        text.setAttribute("x", spot[0]); text.setAttribute("y", spot[1]);
        taken.push(box);
        return true;
      });
      if (!found) { layer.removeChild(text); }
    });
  }
  function move() {  // pan only: the plot's translation and the axis change
    clamp();
    if (Math.abs(off - drawnOff) > 4 * plotW) { draw(); return; }
    plot.setAttribute("transform", shift());
    axis.textContent = ""; drawAxis();
    var range = visible();
    document.getElementById("view-range").textContent =
      new Date(range[0]).toISOString() + " → " + new Date(range[1]).toISOString();
  }
  function zoomAt(factor, px) {
    var t = tOf(px);
    k = k * factor; clamp();
    off = (t - T0) / SPAN * plotW * k - (px - LABEL);
    draw();
  }
  function show(t0, t1) {  // the plot's width first: after a resize it is not the one of the last draw
    measure();
    var w = Math.max(t1 - t0, 10);
    k = SPAN / w; clamp();
    off = (t0 - T0) / SPAN * plotW * k; draw();
  }
  function fitChains() {
    if (!edges.length) { show(T0, T1); return; }
    var lo = Infinity, hi = -Infinity;
    edges.forEach(function (e) { [entries[e.from].t, entries[e.to].t].forEach(function (t) {
      lo = Math.min(lo, t); hi = Math.max(hi, t); }); });
    var margin = Math.max(2000, (hi - lo) * 0.25);
    show(lo - margin, hi + margin);
  }
  function durationMs(text) {
    var total = 0, rest = String(text).trim(), unit = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5 };
    var re = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/;
    if (!rest) { return null; }
    while (rest) {
      var m = re.exec(rest);
      if (!m) { return null; }
      total += parseFloat(m[1]) * unit[m[2]]; rest = rest.slice(m[0].length);
    }
    return total;
  }
  function applyWindow() {
    var aroundBox = document.getElementById("around"), windowBox = document.getElementById("window");
    var centre = Date.parse(aroundBox.value), w = durationMs(windowBox.value);
    aroundBox.setCustomValidity(isNaN(centre) ? "an RFC 3339 time, e.g. 2026-11-22T15:03:00Z" : "");
    windowBox.setCustomValidity(w === null ? "a duration such as 30s, 10m, 1h30m" : "");
    if (isNaN(centre) || w === null) { aroundBox.reportValidity(); windowBox.reportValidity(); return; }
    show(centre - w / 2, centre + w / 2);
  }

  // -- interaction -----------------------------------------------------------------------------------
  function showTip(entry, ev) {
    tip.textContent = "";
    function line(cls, text) { var d = document.createElement("div"); d.className = cls; d.textContent = text;
      tip.appendChild(d); }
    line("tip-time", entry.time + "  ·  " + entry.component + "  ·  " + entry.kind);
    line("tip-text", entry.excerpt);
    line("tip-loc", entry.location);
    entry.findings.forEach(function (id) { line("tip-loc", "→ " + (data.titles[id] || id)); });
    tip.hidden = false;
    var x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    var y = ev.clientY + 16 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 16;
    tip.style.left = Math.max(4, x) + "px"; tip.style.top = Math.max(4, y) + "px";
  }
  var drag = null;
  chart.addEventListener("mouseover", function (ev) {
    var i = ev.target.getAttribute && ev.target.getAttribute("data-i");
    if (i !== null && i !== undefined && !drag) { showTip(entries[+i], ev); }
  });
  chart.addEventListener("mouseout", function (ev) {
    if (ev.target.classList && ev.target.classList.contains("mark")) { tip.hidden = true; }
  });
  chart.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var box = svg.getBoundingClientRect();
    zoomAt(ev.deltaY < 0 ? 1.25 : 0.8, Math.max(LABEL, ev.clientX - box.left));
  }, { passive: false });
  chart.addEventListener("mousedown", function (ev) {
    if (ev.button !== 0) { return; }
    drag = { x: ev.clientX, off: off, moved: false }; svg.classList.add("dragging");
  });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) { return; }
    if (Math.abs(ev.clientX - drag.x) > 2) { drag.moved = true; tip.hidden = true; }
    off = drag.off - (ev.clientX - drag.x); move();
  });
  window.addEventListener("mouseup", function (ev) {
    if (!drag) { return; }
    var moved = drag.moved; drag = null; svg.classList.remove("dragging");
    var i = ev.target.getAttribute && ev.target.getAttribute("data-i");
    if (!moved && i !== null && i !== undefined) { document.getElementById("around").value = entries[+i].time; }
  });
  document.querySelector(".controls").addEventListener("click", function (ev) {
    var act = ev.target.closest("button") && ev.target.closest("button").dataset.act;
    var mid = LABEL + plotW / 2;
    if (act === "zoom-in") { zoomAt(2, mid); } else if (act === "zoom-out") { zoomAt(0.5, mid); }
    else if (act === "left") { off -= plotW / 3; move(); } else if (act === "right") { off += plotW / 3; move(); }
    else if (act === "chains") { fitChains(); } else if (act === "all") { show(T0, T1); }
    else if (act === "window") { applyWindow(); }
  });
  document.getElementById("window").value = data.window || "10m";
  if (data.around) { document.getElementById("around").value = data.around; }
  var legend = document.createElement("p"); legend.className = "legend";
  legend.textContent = "marks by the worst finding citing them:";
  ["critical", "high", "medium", "low", "info", "none"].forEach(function (sev) {
    var dot = document.createElement("span"); dot.className = "dot sev-" + sev; legend.appendChild(dot);
    legend.appendChild(document.createTextNode(sev === "none" ? "context" : sev));
  });
  chart.parentNode.insertBefore(legend, chart.nextSibling);
  measure();
  if (asked) { show(asked[0], asked[1]); } else if (edges.length) { fitChains(); } else { draw(); }
  window.addEventListener("resize", function () { var r = visible(); show(r[0], r[1]); });
})();
