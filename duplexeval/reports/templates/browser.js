"use strict";
(function () {
  var data = JSON.parse(document.getElementById("browser-data").textContent);
  var $ = function (id) { return document.getElementById(id); };
  var el = function (tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  };
  var fmt = function (x) { return x === null || x === undefined ? "" : Number(x).toFixed(2); };
  var filters = { model: "f-model", benchmark: "f-benchmark", metric: "f-metric", verdict: "f-verdict" };
  Object.keys(filters).forEach(function (k) {
    var sel = $(filters[k]);
    var values = {};
    data.records.forEach(function (r) { values[r[k]] = true; });
    Object.keys(values).sort().forEach(function (v) { var o = el("option", null, v); o.value = v; sel.appendChild(o); });
    sel.addEventListener("change", render);
  });
  $("f-text").addEventListener("input", render);
  var MAX_ROWS = 500;

  function matches(r) {
    for (var k in filters) {
      var v = $(filters[k]).value;
      if (v && String(r[k]) !== v) return false;
    }
    var q = $("f-text").value.toLowerCase();
    if (q) {
      var hay = [r.item, r.label, r.outcome, r.reason, r.transcript, r.judge].join(" ").toLowerCase();
      if (hay.indexOf(q) < 0) return false;
    }
    return true;
  }

  function render() {
    var body = $("records-body");
    while (body.firstChild) body.removeChild(body.firstChild);
    var hits = data.records.filter(matches);
    hits.slice(0, MAX_ROWS).forEach(function (r) {
      var tr = el("tr", "rec verdict-" + r.verdict);
      tr.dataset.i = r.i;
      [r.model, r.benchmark, r.item, r.metric, r.label, r.round, r.span ? fmt(r.span[0]) + "–" + fmt(r.span[1]) : "",
       r.outcome, r.verdict, r.reason, r.transcript, r.judge].forEach(function (v, j) {
        tr.appendChild(el("td", j === 10 ? "transcript" : null, v));
      });
      tr.addEventListener("click", function () { show(r, true); });
      body.appendChild(tr);
    });
    $("records-count").textContent = hits.length + " of " + data.records.length + " records" +
      (hits.length > MAX_ROWS ? " (first " + MAX_ROWS + " listed; narrow the filter)" : "") +
      (data.total > data.shown ? "; " + (data.total - data.shown) + " records of the run not in the browser" : "");
  }

  function seek(item, t) {
    var a = $("player");
    a.dataset.seek = t;
    if (!item.audio) { $("audio-note").textContent = "no recording.wav for this item"; return; }
    $("audio-note").textContent = item.audio + " @ " + fmt(t) + " s";
    if (a.getAttribute("src") !== item.audio) {
      a.addEventListener("loadedmetadata", function () { a.currentTime = Number(a.dataset.seek); }, { once: true });
      a.setAttribute("src", item.audio);
      a.load();
    } else {
      a.currentTime = t;
    }
  }

  function lane(parent, name) {
    var row = el("div", "lane");
    row.appendChild(el("span", "lane-name", name));
    var track = el("div", "track");
    row.appendChild(track);
    parent.appendChild(row);
    return track;
  }

  function box(track, s, e, dur, cls, text, tip) {
    var b = el("div", "seg " + cls, text);
    b.style.left = (100 * s / dur).toFixed(3) + "%";
    b.style.width = Math.max(0.4, 100 * (e - s) / dur).toFixed(3) + "%";
    b.title = tip;
    track.appendChild(b);
    return b;
  }

  function show(rec, doSeek) {
    var item = data.items[rec.key] || { turns: [], episodes: [], audio: null };
    var mine = data.records.filter(function (r) { return r.key === rec.key; });
    $("item-title").textContent = rec.key;
    var tl = $("item-timeline");
    while (tl.firstChild) tl.removeChild(tl.firstChild);
    var dur = 1;
    item.turns.forEach(function (t) { dur = Math.max(dur, t.end); });
    item.episodes.forEach(function (e) { dur = Math.max(dur, e[1]); });
    mine.forEach(function (r) { if (r.span) dur = Math.max(dur, r.span[1]); });
    dur = dur * 1.02;
    var turns = lane(tl, "turns");
    item.turns.forEach(function (t) {
      box(turns, t.start, t.end, dur, "turn turn-" + String(t.role || "other"),
          (t.speaker || "") + " " + (t.label || ""), fmt(t.start) + "–" + fmt(t.end) + " s: " + (t.text || ""));
    });
    var speech = lane(tl, "model");
    item.episodes.forEach(function (e) { box(speech, e[0], e[1], dur, "episode", "", "model speech " + fmt(e[0]) + "–" + fmt(e[1]) + " s"); });
    var lanes = {};
    mine.forEach(function (r) {
      if (!r.span) return;
      var wins = lanes[r.metric] || (lanes[r.metric] = lane(tl, r.metric || "windows"));
      var b = box(wins, r.span[0], Math.max(r.span[1], r.span[0] + dur / 200), dur, "win verdict-" + r.verdict + (r.i === rec.i ? " selected" : ""),
                  r.metric, r.metric + " " + (r.label || "") + " " + r.verdict + ": " + (r.reason || ""));
      b.dataset.i = r.i;
      b.addEventListener("click", function () { show(r, true); });
    });
    var d = $("item-detail");
    while (d.firstChild) d.removeChild(d.firstChild);
    [["metric", rec.metric], ["label", rec.label], ["round", rec.round], ["window (s)", rec.span ? fmt(rec.span[0]) + "–" + fmt(rec.span[1]) : ""],
     ["outcome", rec.outcome], ["verdict", rec.verdict], ["reason", rec.reason], ["transcript", rec.transcript],
     ["judge", rec.judge], ["judge reason", rec.judge_reason]].forEach(function (kv) {
      if (kv[1] === null || kv[1] === undefined || kv[1] === "") return;
      d.appendChild(el("dt", null, kv[0]));
      d.appendChild(el("dd", kv[0] === "transcript" ? "transcript" : null, kv[1]));
    });
    $("item-view").hidden = false;
    if (doSeek && rec.span) seek(item, rec.span[0]);
  }

  // A table cell's link (class records-link, data-model / data-benchmark / data-metric):
  // the item browser filtered to the records behind that number.
  function setFilter(sel, value) {
    var s = $(sel);
    if (!value) { s.value = ""; return; }
    var known = Array.prototype.some.call(s.options, function (o) { return o.value === value; });
    s.value = known ? value : "";
  }
  Array.prototype.forEach.call(document.querySelectorAll("a.records-link"), function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      setFilter("f-model", a.dataset.model);
      setFilter("f-benchmark", a.dataset.benchmark);
      setFilter("f-metric", a.dataset.metric);
      setFilter("f-verdict", "");
      $("f-text").value = "";
      render();
      $("browser").scrollIntoView();
    });
  });

  render();
})();
