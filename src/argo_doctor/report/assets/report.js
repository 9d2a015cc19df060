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
  function laneName(id) { return (data.laneNames || {})[id] || id; }  // "Kubernetes Events" for events
  var TOP = 40, LANE = 38, RIGHT = 16, BOTTOM = 8, LABEL_MIN = 90, LABEL_MAX = 300;
  var tMin = entries[0].t, tMax = entries[0].t;
  entries.forEach(function (e) { tMin = Math.min(tMin, e.t); tMax = Math.max(tMax, e.t); });
  // the axis: time, except the middle of each long empty stretch of data.cuts (all but a margin after its last fact
  // and before the next), squeezed into a hatched band CUT wide; u is the position along the axis in milliseconds
  // of time shown. A window asked for (`timeline --around`, "Show window") is drawn whole: no cut inside it.
  var hidden = 0;
  (data.cuts || []).forEach(function (c) { hidden += c[1] - c[0]; });
  var PAD = Math.max(1000, (tMax - tMin - hidden) * 0.04);  // time shown before the first fact, after the last
  var asked = askedWindow();  // the window of `timeline --around --window` is inside the domain, however few facts
  var T0, T1, SPAN, CUT, cuts;
  function layout(win) {
    var wins = [asked, win].filter(Boolean);
    function build(pad) {
      T0 = tMin - pad; T1 = tMax + pad; cuts = []; hidden = 0;
      wins.forEach(function (w) { T0 = Math.min(T0, w[0]); T1 = Math.max(T1, w[1]); });
      (data.cuts || []).forEach(function (c) {
        var keep = Math.min(pad, (c[1] - c[0]) / 4), pieces = [[c[0] + keep, c[1] - keep]];
        wins.forEach(function (w) {
          pieces = [].concat.apply([], pieces.map(function (p) {
            return w[1] <= p[0] || w[0] >= p[1] ? [p] : [[p[0], w[0]], [w[1], p[1]]].filter(function (q) {
              return q[1] - q[0] >= 10 * pad; });
          }));
        });
        pieces.forEach(function (p) { cuts.push({ a: c[0], b: c[1], from: p[0], to: p[1] }); hidden += p[1] - p[0]; });
      });
    }
    build(PAD);
    // a window drawn whole makes the time shown longer: the margins about facts and cuts grow with it
    if (win && (T1 - T0 - hidden) * 0.04 > PAD) { build((T1 - T0 - hidden) * 0.04); }
    var share = Math.min(0.08, 0.3 / Math.max(1, cuts.length));  // of the width, per cut
    CUT = (T1 - T0 - hidden) * share / (1 - share * cuts.length);
    SPAN = uOf(T1);
  }
  function uOf(t) {
    var shift = 0;
    for (var i = 0; i < cuts.length && t > cuts[i].from; i++) {
      var c = cuts[i];
      if (t < c.to) { return c.from - T0 - shift + (t - c.from) / (c.to - c.from) * CUT; }
      shift += c.to - c.from - CUT;
    }
    return t - T0 - shift;
  }
  function tAt(u) {
    var shift = 0;
    for (var i = 0; i < cuts.length; i++) {
      var c = cuts[i], start = c.from - T0 - shift;
      if (u <= start) { break; }
      if (u < start + CUT) { return c.from + (u - start) / CUT * (c.to - c.from); }
      shift += c.to - c.from - CUT;
    }
    return u + T0 + shift;
  }
  function stretchOf(t) {  // [start, end] of the stretch between cuts that holds t
    var lo = T0, hi = T1;
    cuts.forEach(function (c) {
      if (c.to <= t) { lo = Math.max(lo, c.to); }
      if (c.from >= t) { hi = Math.min(hi, c.from); }
    });
    return [lo, hi];
  }
  layout(null);
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
  function label(t, step, withDay) {  // withDay: the day even when the step is below a minute
    var d = new Date(t);
    var day = pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate());
    var hm = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes());
    if (step >= 86400000) { return day; }
    if (step >= 60000) { return day + " " + hm; }
    var text = hm + ":" + pad2(d.getUTCSeconds()) + (step >= 1000 ? "" : "." + pad2(d.getUTCMilliseconds(), 3));
    return withDay ? day + " " + text : text;
  }
  function iso(t) { return new Date(Math.round(t)).toISOString(); }
  function fmtSpan(ms) {  // the two largest units, rounded: 29d 23h, 3h 05m, 12m 30s, 45s
    var units = [["d", 864e5], ["h", 36e5], ["m", 6e4], ["s", 1e3]], parts = [], first = 0;
    while (first < units.length - 1 && ms < units[first][1]) { first++; }
    var unit = units[Math.min(first + 1, units.length - 1)][1];
    ms = Math.round(ms / unit) * unit;
    for (var i = 0; i < units.length && parts.length < 2; i++) {
      var n = Math.floor(ms / units[i][1]);
      if (n || parts.length) { parts.push((parts.length ? pad2(n) : n) + units[i][0]); ms -= n * units[i][1]; }
    }
    return parts.join(" ") || "0s";
  }
  var STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5,
               36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5, 2592e6];
  // x in the plot group, whose translation is what was panned since the last draw: coordinates stay small however
  // far one zooms in (Chromium stops drawing SVG shapes millions of pixels away)
  function xOf(t) { return uOf(t) / SPAN * plotW * k - drawnOff; }
  function shift() { return "translate(" + (LABEL + drawnOff - off) + ",0)"; }
  function tOf(px) { return tAt((px - LABEL + off) / (plotW * k) * SPAN); }  // px: x in the svg
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
    lanes.forEach(function (id) {
      var text = el("text", { class: "lane-label" }, probe), name = laneName(id);
      text.textContent = name;
      if (text.getComputedTextLength() > LABEL_MAX - 16) {
        var cut = name;
        while (cut.length > 1 && text.getComputedTextLength() > LABEL_MAX - 16) {
          cut = cut.slice(0, -1); text.textContent = cut + "…";
        }
      }
      laneText[id] = text.textContent;
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
    var hatch = el("pattern", { id: "cut-hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                patternTransform: "rotate(45)" }, defs);
    el("rect", { class: "cut-fill", width: 6, height: 6 }, hatch);
    el("line", { class: "cut-stripe", x1: 0, y1: 0, x2: 0, y2: 6 }, hatch);
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
      var whole = laneName(name) + (laneName(name) !== name ? " (component " + name + ")" : "");
      if (laneText[name] !== whole) { el("title", {}, text).textContent = whole; }
    });
    var clip = el("g", { "clip-path": "url(#plot-clip)" }, svg);
    axis = el("g", { class: "axis" }, clip);
    plot = el("g", { id: "plot", transform: shift() }, clip);
    drawAxis();
    drawEdges();
    drawMarks();
    drawGaps();
    caption();
  }
  function inView(c) {  // whether a pixel of a cut's band is in view
    var from = LABEL + xOf(c.from) + drawnOff - off, to = LABEL + xOf(c.to) + drawnOff - off;
    return to - LABEL >= 1 && LABEL + plotW - from >= 1;
  }
  // the range in view, and how much empty time the view leaves out
  function caption() {
    var range = visible(), shown = cuts.filter(inView);
    document.getElementById("view-range").textContent = iso(range[0]) + " → " + iso(range[1]);
    var left = 0;
    shown.forEach(function (c) { left += Math.min(c.to, range[1]) - Math.max(c.from, range[0]); });
    var note = document.getElementById("view-cuts");
    if (note) {
      note.textContent = shown.length ? " (" + shown.length + " in view, " + fmtSpan(left) + " in all)" : "";
    }
  }
  // ticks at round times in each stretch between cuts, a band for each cut; every label whole inside the plot, the
  // times in the top row, the cuts' lengths in the row below: the cuts first, then a stretch's own time where it has
  // no round one, then the ticks, each left out where it would cover one placed before
  function drawAxis() {
    var range = visible(), want = (uOf(range[1]) - uOf(range[0])) / Math.max(2, plotW / 130);
    var step = STEPS[STEPS.length - 1], left = LABEL + 2, right = LABEL + plotW - 2, placed = [], labels = [];
    for (var i = 0; i < STEPS.length; i++) { if (STEPS[i] >= want) { step = STEPS[i]; break; } }
    function px(t) { return LABEL + xOf(t) + drawnOff - off; }
    function tick(t, withDay, cls) {
      var g = el("g", { class: cls || "tick" }, axis), x = px(t);
      el("line", { x1: x, x2: x, y1: 18, y2: height }, g);
      labels.push({ x: x, text: label(t, step, withDay), parent: g, rank: cls ? 1 : 2 });
    }
    cuts.forEach(function (c) {
      if (!inView(c)) { return; }
      var xa = px(c.from), xb = px(c.to);
      var g = el("g", { class: "cut" }, axis);
      el("rect", { class: "cut-band", fill: "url(#cut-hatch)", x: xa, y: 18, width: xb - xa, height: height - 18 }, g);
      [xa, xb].forEach(function (x) { el("line", { class: "cut-edge", x1: x, x2: x, y1: 18, y2: height }, g); });
      el("title", {}, g).textContent = fmtSpan(c.to - c.from) + " cut out of the time axis, " +
        iso(c.from) + " to " + iso(c.to) + ": no fact between " + iso(c.a) + " and " + iso(c.b);
      labels.push({ x: (xa + xb) / 2, text: fmtSpan(c.to - c.from) + " cut", parent: g, rank: 0, cls: "cut-label",
                    y: 31 });
    });
    // the stretches between cuts: round times; where none is in view, the time of the stretch's first fact
    var stretches = [[T0, tMin]];
    cuts.forEach(function (c, i) { stretches[i].push(c.from); stretches.push([c.to, c.b]); });
    stretches[stretches.length - 1].push(T1);
    stretches.forEach(function (stretch) {
      var lo = Math.max(stretch[0], range[0]), hi = Math.min(stretch[2], range[1]), any = false;
      for (var t = Math.ceil(lo / step) * step; t <= hi; t += step) { tick(t, cuts.length > 0 && !any); any = true; }
      var own = stretch[1];
      if (!any && cuts.length && own >= range[0] && own <= range[1]) { tick(own, true, "tick own"); }
    });
    labels.sort(function (a, b) { return a.rank - b.rank; });
    labels.forEach(function (item) {
      var y = item.y || 14, text = el("text", { y: y }, item.parent);
      if (item.cls) { text.setAttribute("class", item.cls); }
      text.textContent = item.text;
      var w = text.getComputedTextLength(), x = Math.min(Math.max(item.x - w / 2, left), right - w);
      var box = { x: x - 4, y: y - 12, width: w + 8, height: 16 };
      if (x < left || placed.some(function (p) { return overlaps(p, box); })) { item.parent.removeChild(text); return; }
      text.setAttribute("x", x);
      placed.push(box);
    });
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
      // the arrowhead: about 12 px long and wide (markers scale with the stroke), its tip at the path's end
      var hx = x2 - dx / len * 13, hy = y2 - dy / len * 13;
      arrows.push({ edge: edge, color: color, same: same, x: (x1 + 2 * cx + x2) / 4, y: (y1 + 2 * cy + y2) / 4,
                    head: { x: hx - 6, y: hy - 6, width: 12, height: 12 } });
    });
  }
  function overlaps(a, b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  }
  // gap labels beside the middle of their arrow, each where it covers no mark, no arrowhead, no other label and no
  // cut's label; the arrows in view choose first; a label with no such place is left out (its arrow's tooltip has
  // the gap). Boxes are kept in columns of CELL px, so that hundreds of chains cost no more than a few.
  var CELL = 64;
  function drawGaps() {
    var layer = el("g", { class: "gap-labels" }, plot), columns = {};
    function each(box, fn) {
      for (var c = Math.floor(box.x / CELL); c <= Math.floor((box.x + box.width) / CELL); c++) {
        if (fn(columns[c] || (columns[c] = []))) { return true; }
      }
      return false;
    }
    function take(box) { each(box, function (column) { column.push(box); }); }
    function free(box) {
      return !each(box, function (column) { return column.some(function (t) { return overlaps(t, box); }); });
    }
    marks.forEach(function (mark) {
      var r = +mark.getAttribute("r");
      take({ x: +mark.getAttribute("cx") - r, y: +mark.getAttribute("cy") - r, width: 2 * r, height: 2 * r });
    });
    arrows.forEach(function (arrow) { take(arrow.head); });
    cuts.forEach(function (c) {  // the row of the cut's label, about the band
      take({ x: xOf(c.from) - 50, y: 18, width: xOf(c.to) - xOf(c.from) + 100, height: 17 });
    });
    var texts = arrows.map(function (arrow, i) {
      var text = el("text", { class: "gap-label", fill: arrow.color, "data-edge": i }, layer);
      text.textContent = fmtGap(arrow.edge.gap);
      return text;
    });
    var order = arrows.map(function (arrow, i) { return i; });
    function seen(i) { return arrows[i].x > 0 && arrows[i].x < plotW; }
    order.sort(function (a, b) { return (seen(a) ? 0 : 1) - (seen(b) ? 0 : 1) || a - b; });
    order.forEach(function (i) {
      var arrow = arrows[i], text = texts[i], w = text.getComputedTextLength(), spots = [];
      [0, -12, 12].forEach(function (dy) {
        var y = arrow.y + (arrow.same ? -5 : -3) + dy;
        (arrow.same ? [-w / 2, 6, -w - 6] : [5, -w - 5, -w / 2]).forEach(function (dx) {
          spots.push([arrow.x + dx, y]);
        });
      });
      var found = spots.some(function (spot) {
        var box = { x: spot[0] - 1, y: spot[1] - 10, width: w + 2, height: 13 };
        if (box.y < 20 || box.y + box.height > height) { return false; }
        var crosses = box.x < 0 !== box.x + box.width < 0 || box.x < plotW !== box.x + box.width < plotW;
        if (crosses || (seen(i) && (box.x < 0 || box.x + box.width > plotW))) { return false; }  // whole or none
        if (!free(box)) { return false; }
        text.setAttribute("x", spot[0]); text.setAttribute("y", spot[1]);
        take(box);
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
    caption();
  }
  function zoomAt(factor, px) {
    var t = tOf(px);
    k = k * factor; clamp();
    off = uOf(t) / SPAN * plotW * k - (px - LABEL);
    draw();
  }
  function show(t0, t1) { showU(uOf(t0), uOf(t1)); }
  function showU(u0, u1) {  // the plot's width first: after a resize it is not the one of the last draw
    measure();
    k = SPAN / Math.max(u1 - u0, 10); clamp();
    off = u0 / SPAN * plotW * k; draw();
  }
  function fitChains() {
    if (!edges.length) { show(T0, T1); return; }
    var lo = Infinity, hi = -Infinity;
    edges.forEach(function (e) { [entries[e.from].t, entries[e.to].t].forEach(function (t) {
      lo = Math.min(lo, t); hi = Math.max(hi, t); }); });
    // a margin on both sides, within the stretches that hold the chains: no cut band unless the chains cross one
    var u0 = uOf(lo), u1 = uOf(hi), margin = Math.max(2000, (u1 - u0) * 0.25);
    showU(Math.max(u0 - margin, uOf(stretchOf(lo)[0])), Math.min(u1 + margin, uOf(stretchOf(hi)[1])));
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
    layout([centre - w / 2, centre + w / 2]);
    show(centre - w / 2, centre + w / 2);
  }

  // -- interaction -----------------------------------------------------------------------------------
  function showTip(entry, ev) {
    tip.textContent = "";
    function line(cls, text) { var d = document.createElement("div"); d.className = cls; d.textContent = text;
      tip.appendChild(d); }
    line("tip-time", entry.time + "  ·  " + laneName(entry.component) + "  ·  " + entry.kind);
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
    else if (act === "chains") { layout(null); fitChains(); } else if (act === "all") { layout(null); show(T0, T1); }
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
