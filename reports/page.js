// searchbench report page: interactive figures, sortable tables, games on a board.
// Part of searchbench (same licence); no third-party code.  Reads the JSON in <script id="sb-data">.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("sb-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  var GLYPH = {K: "\u2654", Q: "\u2655", R: "\u2656", B: "\u2657", N: "\u2658", P: "\u2659",
               k: "\u265a", q: "\u265b", r: "\u265c", b: "\u265d", n: "\u265e", p: "\u265f"};
  var FILES = "abcdefgh";

  function el(tag, attrs, text) {
    var e = tag.indexOf("svg:") === 0 ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
    for (var k in (attrs || {})) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(v) {
    if (typeof v !== "number") return String(v);
    return Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toPrecision(3);
  }

  // ------------------------------------------------------------------ figures
  var tip = el("div", {id: "sb-tip", "class": "tip"});
  document.body.appendChild(tip);

  function drawChart(host, chart) {
    host.innerHTML = "";
    host.appendChild(el("div", {"class": "chart-title"}, chart.title));
    var bar = el("div", {"class": "chart-bar"});
    host.appendChild(bar);
    var state = {axis: 0, hidden: {}};
    chart.axes.forEach(function (a, i) {
      var b = el("button", {"class": "axis-btn", "data-axis": a.key}, a.label);
      b.onclick = function () { state.axis = i; render(); };
      bar.appendChild(b);
    });
    var W = 800, H = 380, L = 64, R = 200, T = 14, B = 46;
    var svg = el("svg:svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, "class": "chart-svg"});
    host.appendChild(svg);

    function render() {
      var ax = chart.axes[state.axis];
      Array.prototype.forEach.call(bar.children, function (b, i) { b.className = "axis-btn" + (i === state.axis ? " on" : ""); });
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var pts = [];
      chart.series.forEach(function (s) {
        if (state.hidden[s.name]) return;
        s.points.forEach(function (p) { var x = p.x[ax.key]; if (x !== null && x !== undefined && (!ax.log || x > 0)) pts.push(p); });
      });
      var xs = pts.map(function (p) { return p.x[ax.key]; });
      var ys = [];
      pts.forEach(function (p) { ys.push(p.lo, p.hi, p.y); });
      (chart.hlines || []).forEach(function (h) { ys.push(h.y); });
      if (!ys.length) ys = [0, 1];
      if (!xs.length) xs = [1, 10];
      var tx = ax.log ? Math.log : function (v) { return v; };
      var x0 = tx(Math.min.apply(null, xs)), x1 = tx(Math.max.apply(null, xs));
      if (x1 === x0) { x0 -= 1; x1 += 1; }
      var pad = (x1 - x0) * 0.06; x0 -= pad; x1 += pad;
      var y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
      if (y1 === y0) { y0 -= 1; y1 += 1; }
      var yp = (y1 - y0) * 0.06; y0 -= yp; y1 += yp;
      function X(v) { return L + (tx(v) - x0) / (x1 - x0) * (W - L - R); }
      function Y(v) { return T + (y1 - v) / (y1 - y0) * (H - T - B); }
      svg.appendChild(el("svg:rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#999"}));
      // ticks
      var yt = niceTicks(y0, y1, 6);
      yt.forEach(function (v) {
        svg.appendChild(el("svg:line", {x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: "#eee"}));
        svg.appendChild(el("svg:text", {x: L - 6, y: Y(v) + 4, "text-anchor": "end", "class": "tick"}, fmt(v)));
      });
      var xt = ax.log ? logTicks(Math.exp(x0), Math.exp(x1)) : niceTicks(x0, x1, 7);
      xt.forEach(function (v) {
        svg.appendChild(el("svg:line", {x1: X(v), x2: X(v), y1: T, y2: H - B, stroke: "#eee"}));
        svg.appendChild(el("svg:text", {x: X(v), y: H - B + 16, "text-anchor": "middle", "class": "tick"}, fmt(v)));
      });
      svg.appendChild(el("svg:text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", "class": "label"}, ax.label + (ax.log ? " (log)" : "")));
      var yl = el("svg:text", {x: 14, y: (T + H - B) / 2, "text-anchor": "middle", "class": "label",
                               transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"}, chart.ylabel);
      svg.appendChild(yl);
      (chart.hlines || []).forEach(function (h) {
        svg.appendChild(el("svg:line", {x1: L, x2: W - R, y1: Y(h.y), y2: Y(h.y), stroke: "#333", "stroke-dasharray": "5,4", "class": "hline"}));
        svg.appendChild(el("svg:text", {x: W - R - 4, y: Y(h.y) - 4, "text-anchor": "end", "class": "tick"}, h.label));
      });
      chart.series.forEach(function (s, si) {
        var color = COLORS[si % COLORS.length];
        // legend (click: hide or show the series)
        var ly = T + 14 + si * 18;
        var lg = el("svg:g", {"class": "legend" + (state.hidden[s.name] ? " off" : ""), "data-series": s.name, cursor: "pointer"});
        lg.appendChild(el("svg:rect", {x: W - R + 10, y: ly - 9, width: 12, height: 12, fill: color}));
        lg.appendChild(el("svg:text", {x: W - R + 27, y: ly + 1, "class": "tick"}, s.name));
        lg.onclick = function () { state.hidden[s.name] = !state.hidden[s.name]; render(); };
        svg.appendChild(lg);
        if (state.hidden[s.name]) return;
        var own = s.points.filter(function (p) { var x = p.x[ax.key]; return x !== null && x !== undefined && (!ax.log || x > 0); });
        own.sort(function (a, b) { return a.x[ax.key] - b.x[ax.key]; });
        if (own.length > 1) {
          svg.appendChild(el("svg:polyline", {fill: "none", stroke: color, "stroke-width": 1.5,
            points: own.map(function (p) { return X(p.x[ax.key]) + "," + Y(p.y); }).join(" ")}));
        }
        own.forEach(function (p) {
          var cx = X(p.x[ax.key]);
          svg.appendChild(el("svg:line", {x1: cx, x2: cx, y1: Y(p.lo), y2: Y(p.hi), stroke: color}));
          var m = el("svg:circle", {cx: cx, cy: Y(p.y), r: 5, fill: color, "class": "mark", "data-player": p.player});
          m.addEventListener("mousemove", function (ev) {
            var lines = ["<b>" + esc(p.player) + "</b>", "Elo " + fmt(p.y) + " [" + fmt(p.lo) + ", " + fmt(p.hi) + "]"];
            for (var k in p.info) lines.push(esc(k) + ": " + esc(fmt(p.info[k])));
            chart.axes.forEach(function (a) { if (p.x[a.key] !== null && p.x[a.key] !== undefined) lines.push(esc(a.label) + ": " + fmt(p.x[a.key])); });
            tip.innerHTML = lines.join("<br>");
            tip.style.display = "block";
            tip.style.left = (ev.pageX + 14) + "px";
            tip.style.top = (ev.pageY + 10) + "px";
          });
          m.addEventListener("mouseleave", function () { tip.style.display = "none"; });
          m.addEventListener("click", function () { showGamesOf(p.player); });
          svg.appendChild(m);
        });
      });
    }
    render();
  }
  function niceTicks(a, b, n) {
    var step = Math.pow(10, Math.floor(Math.log10((b - a) / n)));
    var err = (b - a) / n / step;
    step *= err >= 7.5 ? 10 : err >= 3 ? 5 : err >= 1.5 ? 2 : 1;
    var out = [];
    for (var v = Math.ceil(a / step) * step; v <= b + 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }
  function logTicks(a, b) {
    var out = [], steps = b / a < 20 ? [1, 1.5, 2, 3, 4, 5, 6, 8] : [1, 2, 5];
    for (var e = Math.floor(Math.log10(a)); e <= Math.ceil(Math.log10(b)); e++) {
      steps.forEach(function (m) { var v = m * Math.pow(10, e); if (v >= a && v <= b) out.push(v); });
    }
    return out.length >= 2 ? out : [a, b];
  }
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); }

  // ------------------------------------------------------------------ sortable tables, rows to games
  function cellValue(t) {
    var s = t.replace(/[\u2212]/g, "-").replace(/[%,]/g, "").trim();
    var m = s.match(/^[+-]?\d+(\.\d+)?/);
    return m ? parseFloat(m[0]) : null;
  }
  Array.prototype.forEach.call(document.querySelectorAll("#sb-body table"), function (table) {
    table.classList.add("sortable");
    var heads = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var tbody = table.tBodies[0];
        var rows = Array.prototype.slice.call(tbody.rows);
        var asc = th.getAttribute("data-sort") !== "asc";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-sort"); });
        th.setAttribute("data-sort", asc ? "asc" : "desc");
        rows.sort(function (a, b) {
          var x = a.cells[col] ? a.cells[col].textContent : "", y = b.cells[col] ? b.cells[col].textContent : "";
          var vx = cellValue(x), vy = cellValue(y);
          var c = vx !== null && vy !== null ? vx - vy : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { tbody.appendChild(r); });
      });
    });
    Array.prototype.forEach.call(table.querySelectorAll("tbody tr[data-player]"), function (tr) {
      tr.classList.add("has-games");
      tr.title = "click: the games of " + tr.getAttribute("data-player");
      tr.addEventListener("click", function () { showGamesOf(tr.getAttribute("data-player")); });
    });
  });

  // ------------------------------------------------------------------ games
  var games = D.games || [];
  var gamesBox = document.getElementById("sb-games");
  var SHOW = 200;
  function showGamesOf(player) {
    if (!gamesBox) return;
    var f = document.getElementById("sb-filter");
    f.value = player;
    listGames();
    gamesBox.scrollIntoView();
  }
  function listGames() {
    var f = document.getElementById("sb-filter").value.trim();
    var tbody = document.getElementById("sb-game-rows");
    tbody.innerHTML = "";
    var hits = games.filter(function (g) { return !f || g.w === f || g.b === f || (f.slice(-1) === "*" && (g.w + " " + g.b).indexOf(f.slice(0, -1)) >= 0); });
    document.getElementById("sb-count").textContent = hits.length + " game" + (hits.length === 1 ? "" : "s") + (f ? " of " + f : "") +
      (hits.length > SHOW ? " (the first " + SHOW + " listed)" : "");
    hits.slice(0, SHOW).forEach(function (g) {
      var tr = el("tr", {"data-game": g.id, "class": "game-row"});
      [g.id, g.w, g.b, g.r, g.why, g.uci.length, g.opening].forEach(function (v) { tr.appendChild(el("td", {}, v)); });
      tr.addEventListener("click", function () { openGame(g); });
      tbody.appendChild(tr);
    });
  }
  if (gamesBox) {
    document.getElementById("sb-filter").addEventListener("input", listGames);
    listGames();
  }

  // ------------------------------------------------------------------ the board
  function parseFen(fen) {
    var parts = fen.split(" ");
    var place = parts[0], pocket = "";
    var lb = place.indexOf("[");
    if (lb >= 0) { pocket = place.slice(lb + 1, place.indexOf("]")); place = place.slice(0, lb); }
    var ranks = place.split("/");
    if (ranks.length === 9) { pocket = ranks[8]; ranks = ranks.slice(0, 8); }
    var sq = new Array(64).fill(""), promoted = new Array(64).fill(false);
    for (var r = 0; r < 8; r++) {
      var f = 0, s = ranks[r];
      for (var i = 0; i < s.length; i++) {
        var c = s[i];
        if (c === "~") { promoted[(7 - r) * 8 + f - 1] = true; continue; }
        if (c >= "1" && c <= "8") { f += parseInt(c, 10); continue; }
        sq[(7 - r) * 8 + f] = c; f++;
      }
    }
    var pockets = {w: {}, b: {}};
    "PNBRQ".split("").forEach(function (p) { pockets.w[p] = 0; pockets.b[p] = 0; });
    for (var j = 0; j < pocket.length; j++) {
      var p = pocket[j];
      if (p === p.toUpperCase()) pockets.w[p] += 1; else pockets.b[p.toUpperCase()] += 1;
    }
    return {sq: sq, promoted: promoted, pockets: pockets, white: (parts[1] || "w") === "w", zh: lb >= 0 || D.variant === "crazyhouse"};
  }
  function idx(s) { return FILES.indexOf(s[0]) + 8 * (parseInt(s[1], 10) - 1); }
  function copyPos(p) {
    return {sq: p.sq.slice(), promoted: p.promoted.slice(), zh: p.zh, white: p.white,
            pockets: {w: Object.assign({}, p.pockets.w), b: Object.assign({}, p.pockets.b)}};
  }
  // apply a UCI move (drops "P@e4", promotions, castling, en passant, crazyhouse captures to the
  // pocket); ``sink(kind, side)``: where a captured piece goes (bughouse: the partner's pocket)
  function applyUci(pos, uci, sink) {
    var p = copyPos(pos), side = p.white ? "w" : "b";
    if (uci[1] === "@") {
      var t = idx(uci.slice(2, 4)), kind = uci[0].toUpperCase();
      p.sq[t] = p.white ? kind : kind.toLowerCase();
      p.promoted[t] = false;
      p.pockets[side][kind] -= 1;
    } else if (uci !== "0000") {
      var from = idx(uci.slice(0, 2)), to = idx(uci.slice(2, 4)), promo = uci.length > 4 ? uci[4] : "";
      var piece = p.sq[from], captured = p.sq[to], capPromoted = p.promoted[to];
      if (piece.toUpperCase() === "P" && (from % 8) !== (to % 8) && !captured) {  // en passant
        var ep = (to % 8) + 8 * Math.floor(from / 8);
        captured = p.sq[ep]; capPromoted = p.promoted[ep]; p.sq[ep] = ""; p.promoted[ep] = false;
      }
      if (piece.toUpperCase() === "K" && Math.abs((to % 8) - (from % 8)) === 2) {  // castling
        var rank = Math.floor(from / 8) * 8, kingside = (to % 8) > (from % 8);
        var rf = rank + (kingside ? 7 : 0), rt = rank + (kingside ? 5 : 3);
        p.sq[rt] = p.sq[rf]; p.sq[rf] = "";
      }
      if (captured && p.zh) {
        var kind = capPromoted ? "P" : captured.toUpperCase();
        if (sink) sink(kind, side); else p.pockets[side][kind] += 1;
      }
      var wasPromoted = p.promoted[from];
      p.sq[to] = promo ? (p.white ? promo.toUpperCase() : promo.toLowerCase()) : piece;
      p.promoted[to] = p.zh && (!!promo || wasPromoted);
      p.sq[from] = ""; p.promoted[from] = false;
    }
    p.white = !p.white;
    return p;
  }
  var view = null;
  function openGame(g) {
    var box = document.getElementById("sb-viewer");
    box.style.display = "block";
    // a position is a list of boards (two in bughouse: FEN "A | B", moves "A:e2e4")
    var positions = [g.fen.split(" | ").map(parseFen)], broken = null;
    // a stored move that is not a move of the board shown (a damaged row) ends the replay there
    var MOVE = /^([a-h][1-8][a-h][1-8][nbrqk]?|[PNBRQ]@[a-h][1-8]|0000)$/;
    g.uci.some(function (m, i) {
      var last = positions[positions.length - 1].slice();
      var board = 0, uci = String(m);
      if (uci.length > 2 && uci[1] === ":") { board = uci[0] === "B" ? 1 : 0; uci = uci.slice(2); }
      if (!MOVE.test(uci) || !last[board] || (uci[1] !== "@" && uci !== "0000" && !last[board].sq[idx(uci.slice(0, 2))])) {
        broken = "move " + (i + 1) + " (" + m + ") does not replay: the board stops before it";
        return true;
      }
      var sink = null;
      if (last.length === 2) {  // bughouse: a capture goes to the partner (other board, other colour)
        var other = copyPos(last[1 - board]);
        last[1 - board] = other;
        sink = function (kind, side) { other.pockets[side === "w" ? "b" : "w"][kind] += 1; };
      }
      last[board] = applyUci(last[board], uci, sink);
      positions.push(last);
      return false;
    });
    view = {g: g, positions: positions, ply: 0};
    makeBoards(positions[0].length);
    document.getElementById("sb-vtitle").textContent = "Game " + g.id + ": " + g.w + " \u2013 " + g.b + "  " + g.r + " (" + g.why + ")" +
      (broken ? " \u2014 " + broken : "");
    var ml = document.getElementById("sb-moves");
    ml.innerHTML = "";
    var n = g.fullmove;
    g.san.forEach(function (s, i) {
      var white = g.black_first ? i % 2 === 1 : i % 2 === 0;
      if ((white || i === 0) && D.variant !== "bughouse") ml.appendChild(el("span", {"class": "mno"}, n + (white ? "." : "...")));
      var a = el("span", {"class": "mv", "data-ply": i + 1}, s);
      a.onclick = function () { go(i + 1); };
      ml.appendChild(a);
      ml.appendChild(document.createTextNode(" "));
      if (!white) n += 1;
    });
    document.getElementById("sb-pgn").value = pgnOf(g);
    go(0);
    box.scrollIntoView();
  }
  function pgnOf(g) {
    if (D.variant === "bughouse") {  // the moves as stored ("A:e2e4"); the database's BPGN has the clocks
      return "[Event \"" + D.title + "\"]\n[White \"" + g.w + "\"]\n[Black \"" + g.b + "\"]\n[Result \"" + g.r +
        "\"]\n[FEN \"" + g.fen + "\"]\n\n" + g.uci.join(" ") + " " + g.r + "\n";
    }
    var tags = [["Event", D.title], ["White", g.w], ["Black", g.b], ["Result", g.r]];
    if (D.variant !== "chess") tags.push(["Variant", D.variant.charAt(0).toUpperCase() + D.variant.slice(1)]);
    tags.push(["FEN", g.fen], ["SetUp", "1"], ["Termination", g.why]);
    var out = tags.map(function (t) { return "[" + t[0] + " \"" + String(t[1]).replace(/"/g, "'") + "\"]"; }).join("\n") + "\n\n";
    var mv = [], n = g.fullmove;
    g.san.forEach(function (s, i) {
      var white = g.black_first ? i % 2 === 1 : i % 2 === 0;
      if (white) mv.push(n + ". " + s); else { if (i === 0) mv.push(n + "... " + s); else mv.push(s); n += 1; }
    });
    return out + mv.join(" ") + " " + g.r + "\n";
  }
  function go(ply) {
    if (!view) return;
    ply = Math.max(0, Math.min(view.positions.length - 1, ply));
    view.ply = ply;
    drawBoard(view.positions[ply], ply ? view.g.uci[ply - 1] : null);
    document.getElementById("sb-ply").textContent = "ply " + ply + " / " + (view.positions.length - 1);
    Array.prototype.forEach.call(document.querySelectorAll("#sb-moves .mv"), function (a) {
      a.className = "mv" + (parseInt(a.getAttribute("data-ply"), 10) === ply ? " cur" : "");
    });
    drawStats(view.g, ply);
  }
  // one board block: black's pocket, the board, white's pocket (ids: sb-board, sb-pocket-w/-b; the
  // second board of bughouse: the same with "-2")
  function makeBoards(n) {
    var host = document.getElementById("sb-boards");
    host.innerHTML = "";
    for (var i = 0; i < n; i++) {
      var suf = i ? "-2" : "", box = el("div", {"class": "board-box"});
      if (n > 1) box.appendChild(el("div", {"class": "board-name"}, "board " + "AB"[i]));
      box.appendChild(el("div", {"class": "pocket", id: "sb-pocket-b" + suf}));
      box.appendChild(el("div", {"class": "board", id: "sb-board" + suf, "data-board": "AB"[i]}));
      box.appendChild(el("div", {"class": "pocket", id: "sb-pocket-w" + suf}));
      host.appendChild(box);
    }
  }
  function drawBoard(boards, last) {
    var board = 0;
    if (last && last.length > 2 && last[1] === ":") { board = last[0] === "B" ? 1 : 0; last = last.slice(2); }
    var turns = [];
    boards.forEach(function (pos, i) {
      drawOne(pos, i === board ? last : null, i ? "-2" : "");
      turns.push((boards.length > 1 ? "AB"[i] + ": " : "") + (pos.white ? "White" : "Black") + " to move");
    });
    document.getElementById("sb-turn").textContent = turns.join(", ");
  }
  function drawOne(pos, last, suf) {
    var b = document.getElementById("sb-board" + suf);
    b.innerHTML = "";
    var hi = {};
    if (last && last !== "0000") { if (last[1] !== "@") hi[idx(last.slice(0, 2))] = 1; hi[idx(last.slice(2, 4))] = 1; }
    for (var r = 7; r >= 0; r--) {
      for (var f = 0; f < 8; f++) {
        var i = r * 8 + f, pc = pos.sq[i];
        var d = el("div", {"class": "sq " + ((r + f) % 2 ? "light" : "dark") + (hi[i] ? " last" : ""),
                           "data-sq": FILES[f] + (r + 1), "data-piece": pc}, pc ? GLYPH[pc] : "");
        b.appendChild(d);
      }
    }
    ["w", "b"].forEach(function (side) {
      var box = document.getElementById("sb-pocket-" + side + suf);
      box.innerHTML = "";
      box.style.display = pos.zh ? "block" : "none";
      "QRBNP".split("").forEach(function (k) {
        var n = pos.pockets[side][k];
        var s = el("span", {"class": "pk", "data-piece": side === "w" ? k : k.toLowerCase(), "data-count": n},
                   GLYPH[side === "w" ? k : k.toLowerCase()] + (n ? "\u00d7" + n : ""));
        if (!n) s.classList.add("none");
        box.appendChild(s);
      });
    });
  }
  var STAT = [["nodes", 0], ["evals", 1], ["cp", 2], ["depth", 3], ["ms", 4]];
  function drawStats(g, ply) {
    var host = document.getElementById("sb-stats");
    host.innerHTML = "";
    var sel = document.getElementById("sb-stat");
    var which = parseInt(sel.value, 10);
    var W = 420, H = 150, L = 46, B = 20, T = 8, R = 8;
    var svg = el("svg:svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H});
    host.appendChild(svg);
    var vals = g.stats.map(function (s) { return s[which]; });
    var num = vals.filter(function (v) { return v !== null; });
    var lo = Math.min.apply(null, num.concat([0])), hi = Math.max.apply(null, num.concat([1]));
    function X(i) { return L + (i + 0.5) / Math.max(1, vals.length) * (W - L - R); }
    function Y(v) { return T + (hi - v) / (hi - lo || 1) * (H - T - B); }
    svg.appendChild(el("svg:line", {x1: L, x2: W - R, y1: Y(0), y2: Y(0), stroke: "#bbb"}));
    [lo, hi].forEach(function (v) { svg.appendChild(el("svg:text", {x: L - 4, y: Y(v) + 4, "text-anchor": "end", "class": "tick"}, fmt(v))); });
    vals.forEach(function (v, i) {
      if (v === null) return;
      var white = g.black_first ? i % 2 === 1 : i % 2 === 0;
      svg.appendChild(el("svg:rect", {x: X(i) - 1.5, y: Math.min(Y(v), Y(0)), width: 3, height: Math.abs(Y(v) - Y(0)) || 1,
                                      fill: i + 1 === ply ? "#d62728" : white ? "#888" : "#333", "class": "stat-bar"}));
    });
    var cur = ply > 0 ? g.stats[ply - 1] : null;
    document.getElementById("sb-statline").textContent = cur ? "move " + ply + ": nodes " + cur[0] + ", evaluator calls " + cur[1] +
      ", score " + (cur[2] === null ? "-" : cur[2] + " cp") + ", depth " + cur[3] + ", " + cur[4] + " ms" : "";
  }
  if (document.getElementById("sb-viewer")) {
    document.getElementById("sb-first").onclick = function () { go(0); };
    document.getElementById("sb-prev").onclick = function () { go(view.ply - 1); };
    document.getElementById("sb-next").onclick = function () { go(view.ply + 1); };
    document.getElementById("sb-last").onclick = function () { go(view.positions.length - 1); };
    document.getElementById("sb-stat").onchange = function () { if (view) drawStats(view.g, view.ply); };
    document.getElementById("sb-copy").onclick = function () {
      var t = document.getElementById("sb-pgn"); t.select();
      if (navigator.clipboard) navigator.clipboard.writeText(t.value).catch(function () {});
    };
    document.addEventListener("keydown", function (e) {
      if (!view || e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA") return;
      if (e.key === "ArrowRight") go(view.ply + 1);
      if (e.key === "ArrowLeft") go(view.ply - 1);
    });
  }

  // ------------------------------------------------------------------ charts in place
  Array.prototype.forEach.call(document.querySelectorAll("div.chart[data-chart]"), function (host) {
    drawChart(host, D.charts[parseInt(host.getAttribute("data-chart"), 10)]);
  });
  window.searchbench = {go: go, openGame: function (id) { openGame(games.filter(function (g) { return g.id === id; })[0]); },
                        showGamesOf: showGamesOf, view: function () { return view; }};
})();
