// The step-through page.  The data (see shared/tools/show/page.py) holds one or three recorded
// crawls; this script draws their lanes on one time axis and steps through them.
//
// The cursor is one position in all the steps of all the crawls, merged in time order.
// Each crawl's panel shows its own latest step at or before the cursor's moment, so
// with three crawls the three panels show the same moment of three crawls.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("show-data").textContent);
  const KINDS = DATA.kinds;
  const COLORS = {
    future: "#2aa1a8", readable: "#3d85d6", writable: "#e8913a",
    queue: "#3fa466", task: "#9b6bd1", timer: "#9a9a9a",
  };

  // ---- the reader's language ----------------------------------------------------------
  // Every text the page shows a reader comes from one table per language (texts.json):
  // the address's #lang=, else the language the page was made in (--lang, or a Chinese
  // locale), else the browser's.  What the crawls recorded (URLs, names, code) is data,
  // shown as it is.
  const TEXTS = DATA.texts;
  function pick(tag) {  // "zh", "zh-CN", "zh-Hans-CN" -> "zh-CN"; a language not here -> null
    if (!tag) return null;
    if (TEXTS[tag]) return tag;
    return /^zh\b/i.test(tag) ? "zh-CN" : /^en\b/i.test(tag) ? "en" : null;
  }
  const langInAddress = () => pick((/(?:^#|&)lang=([\w-]+)/.exec(location.hash) || [])[1]);
  let lang = langInAddress() || pick(DATA.lang) || pick(navigator.language) || "en";
  // The text of a key, its {names} filled in from values.
  function t(key, values) {
    const text = TEXTS[lang][key] ?? TEXTS.en[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (values ? String(values[name]) : whole));
  }
  const seconds = (s) => t("unit.seconds", { s });
  // What an actor waits for, as the recorder says it ("fd 7 readable", "the queue: get"),
  // in the reader's language: the English table's "wait." texts, read as patterns, find the
  // key and the names (fd, callback, ...) that stay as they are.  In English, the label.
  const patterns = (prefix, whole) => Object.keys(TEXTS.en).filter((key) => key.startsWith(prefix)).map((key) => {
    const names = [];
    const source = TEXTS.en[key].replace(/[.*+?^$()|[\]\\]/g, "\\$&")
      .replace(/\{(\w+)\}/g, (all, name) => { names.push(name); return "(.+?)"; });
    return { key, names, re: new RegExp(whole ? "^" + source + "$" : source, whole ? "" : "g") };
  });
  const PATTERNS = patterns("wait.", true);
  const said = new Map();  // lang + label -> its text
  function waitText(label) {
    if (label === null || lang === "en") return label;
    if (!said.has(lang + label)) {
      let text = label;
      for (const { key, names, re } of PATTERNS) {
        const found = re.exec(label);
        if (!found) continue;
        const values = {};
        names.forEach((name, i) => {
          const value = found[i + 1];
          values[name] = name === "what" ? waitText(value)
            : name === "event" && TEXTS.en["kind." + value] ? t("kind." + value) : value;
        });
        text = t(key, values);
        break;
      }
      said.set(lang + label, text);
    }
    return said.get(lang + label);
  }

  // ---- the data, made easy to use ---------------------------------------------------
  const crawls = DATA.crawls.map(function (c, index) {
    const s = (i) => (i < 0 ? null : c.strings[i]);
    const n = c.steps.t.length;
    const waits = [];
    for (let i = 0; i < c.waits.length; i += 5) {
      waits.push({ actor: c.waits[i], begin: c.waits[i + 1], end: c.waits[i + 2],
        kind: KINDS[c.waits[i + 3]], label: s(c.waits[i + 4]) });
    }
    const spans = c.actors.map(() => [-1, -1]);  // each actor's first and last step
    for (let i = 0; i < n; i++) {
      const span = spans[c.steps.a[i]];
      if (span[0] < 0) span[0] = i;
      span[1] = i;
    }
    return {
      index, s, n, waits, spans, raw: c,
      title: c.title, steps: c.steps, chains: c.chains, states: c.states,
      actors: c.actors, rows: c.rows.map(s),
      files: c.files.map((f) => ({ path: f[0], lines: f[1].split("\n") })),
    };
  });

  function actorName(c, a) {
    if (a < 0) return "\u2014";
    const detail = c.s(c.actors[a][1]);
    return c.s(c.actors[a][0]) + (detail ? " " + detail : "");
  }

  // Merge the crawls' steps in time order (ties: the crawl listed first).
  const total = crawls.reduce((sum, c) => sum + c.n, 0);
  const mergedCrawl = new Int32Array(total);
  const mergedStep = new Int32Array(total);
  (function merge() {
    const next = crawls.map(() => 0);
    for (let k = 0; k < total; k++) {
      let best = -1;
      for (const c of crawls) {
        const i = next[c.index];
        if (i < c.n && (best < 0 || c.steps.t[i] < crawls[best].steps.t[next[best]])) best = c.index;
      }
      mergedCrawl[k] = best;
      mergedStep[k] = next[best]++;
    }
  })();
  // For each crawl: where each of its steps is in the merged order, and how many of its
  // steps come at or before each merged position (its current step there, plus one).
  for (const c of crawls) {
    c.position = new Int32Array(c.n);
    c.upTo = new Int32Array(total);
  }
  (function count() {
    const seen = crawls.map(() => 0);
    for (let k = 0; k < total; k++) {
      const c = crawls[mergedCrawl[k]];
      c.position[mergedStep[k]] = k;
      seen[c.index]++;
      for (const other of crawls) other.upTo[k] = seen[other.index];
    }
  })();

  // ---- the state of the page ------------------------------------------------------------
  let cursor = 0;
  let xmode = "time";
  let view = null;  // [from, to] in x units: microseconds, or merged positions
  let player = null;
  const chosenFrame = crawls.map(() => -1);  // a frame clicked in the chain, until the next step

  function currentStep(c) { return total ? c.upTo[cursor] - 1 : -1; }
  function xOf(c, i) { return xmode === "time" ? c.steps.t[i] : c.position[i]; }
  function cursorX() {
    if (!total) return 0;
    return xmode === "time" ? crawls[mergedCrawl[cursor]].steps.t[mergedStep[cursor]] : cursor;
  }
  function fullView() {
    if (xmode === "steps") return [-0.5, Math.max(total, 1) - 0.5];
    const end = Math.max(1, ...crawls.map((c) => (c.n ? c.steps.t[c.n - 1] : 0)));
    return [-end * 0.01, end * 1.01];
  }

  // ---- the lanes --------------------------------------------------------------------
  const canvas = document.getElementById("lanes");
  const ctx = canvas.getContext("2d");
  // The lanes' sizes follow the canvas's CSS font size (page.css), so that the large type
  // of a projector (#big) makes the rows as much larger as their labels.
  let FONT, GUTTER, AXIS, HEAD, ROW, BAR, height;
  const blocks = [];  // per crawl: the y of its first row
  function layout() {
    FONT = parseFloat(getComputedStyle(canvas).fontSize) || 18;
    GUTTER = Math.round(FONT * 14.5);  // room for the axis's title and the lanes' names
    [AXIS, HEAD, ROW, BAR] = [2.4, 1.8, 2, 1.3].map((k) => Math.round(FONT * k));
    height = AXIS;
    blocks.length = 0;
    for (const c of crawls) {
      blocks.push(height + HEAD);
      height += HEAD + c.rows.length * ROW + 6;
    }
  }
  layout();

  function toPixel(x, width) {
    return GUTTER + ((x - view[0]) / (view[1] - view[0])) * (width - GUTTER - 10);
  }
  function fromPixel(px, width) {
    return view[0] + ((px - GUTTER) / (width - GUTTER - 10)) * (view[1] - view[0]);
  }

  // A tick's label: seconds to as many places as the step between ticks needs, or a step.
  function tickLabel(x, tick) {
    if (xmode !== "time") return t("axis.step", { n: Math.round(x + 1) });
    return seconds((x / 1e6).toFixed(tick >= 1e5 ? 1 : tick >= 1e4 ? 2 : tick >= 1e3 ? 3 : 4));
  }

  // The step between ticks: the finest of 1, 2, 5 times a power of ten that leaves each
  // label room, and room between labels, so that any width gets as many ticks as it holds
  // (a narrow one, #big's lanes beside the code, too: a fixed share of it held one tick).
  function tickStep(span, pixels) {
    const room = Math.max(1, pixels);  // a hidden canvas has none: one tick, not a hang
    const far = Math.max(Math.abs(view[0]), Math.abs(view[1]));  // the longest label's x
    for (let power = Math.pow(10, Math.floor(Math.log10(span)) - 3); ; power *= 10) {
      for (const m of [1, 2, 5]) {
        const tick = m * power;
        if (xmode !== "time" && tick < 1) continue;  // steps are whole numbers
        // A label and a font's width of space: two of space left some spans with two
        // labels alone (a 0.19 s crawl in #big's half screen: 0.05 s steps did not fit).
        const needs = ctx.measureText(tickLabel(far, tick)).width + FONT;
        if ((tick / span) * room >= needs) return tick;
      }
    }
  }

  // The first step of crawl c whose x is at least x (steps are in x order in both modes).
  function firstAtOrAfter(c, x) {
    let lo = 0, hi = c.n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xOf(c, mid) < x) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // What the last draw wrote on the lanes: [text, its width, the room it had], for the tests.
  const written = [];
  function draw() {
    canvas.dataset.view = JSON.stringify([view[0], view[1], GUTTER, 10]);  // for the tests
    written.length = 0;
    const width = canvas.clientWidth;
    const ratio = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.height = height + "px";
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = FONT + "px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    // The axis: seconds, or step numbers.
    const tick = tickStep(view[1] - view[0], width - GUTTER - 10);
    ctx.fillStyle = "#667085";
    ctx.strokeStyle = "#eef0f4";
    const ticks = [];  // [label, its left, its width]: what the axis says, for the tests
    let free = GUTTER - 3;  // where the last label ended: no label over another
    for (let x = Math.ceil(view[0] / tick) * tick; x <= view[1]; x += tick) {
      const px = toPixel(x, width);
      ctx.beginPath();
      ctx.moveTo(px, AXIS - 4);
      ctx.lineTo(px, height);
      ctx.stroke();
      const label = tickLabel(x, tick), wide = ctx.measureText(label).width;
      // Right of its tick; the last one, near the edge, ends at the edge instead.
      const left = Math.min(px + 3, width - wide - 2);
      if (left < free) continue;
      ctx.fillText(label, left, AXIS / 2);
      ticks.push([label, left, wide]);
      free = left + wide + FONT / 2;
    }
    canvas.dataset.ticks = JSON.stringify(ticks);
    ctx.fillText(t(xmode === "time" ? "axis.time" : "axis.steps"), 8, AXIS / 2);
    for (const c of crawls) drawCrawl(c, width);
    // The cursor: the moment shown in the panels.
    const px = toPixel(cursorX(), width);
    ctx.strokeStyle = "#c0392b";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(px, AXIS - 6);
    ctx.lineTo(px, height);
    ctx.stroke();
    ctx.lineWidth = 1;
    // The gutter is drawn last, over whatever began before the view.
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, AXIS, GUTTER - 4, height - AXIS);
    for (const c of crawls) drawLabels(c);
    canvas.dataset.written = JSON.stringify(written);
    canvas.dataset.rows = JSON.stringify(crawls.map((c) => c.rows.map((_, r) => rowLabel(c, r))));
  }

  function drawCrawl(c, width) {
    const top = blocks[c.index];
    const cur = currentStep(c);
    const curActor = cur >= 0 ? c.steps.a[cur] : -1;
    if (curActor >= 0 && c.actors[curActor][2] >= 0) {
      ctx.fillStyle = "#fdf1ef";
      ctx.fillRect(GUTTER, top + c.actors[curActor][2] * ROW, width - GUTTER, ROW);
    }
    ctx.strokeStyle = "#f0f2f5";
    for (let r = 0; r <= c.rows.length; r++) {
      ctx.beginPath();
      ctx.moveTo(GUTTER, top + r * ROW + 0.5);
      ctx.lineTo(width, top + r * ROW + 0.5);
      ctx.stroke();
    }
    const left = fromPixel(GUTTER - 20, width), right = fromPixel(width + 20, width);
    // Each actor's life, thin, and its URL where there is room.
    ctx.fillStyle = "#98a2b3";
    for (let a = 0; a < c.actors.length; a++) {
      const row = c.actors[a][2], span = c.spans[a];
      if (row < 0 || span[0] < 0 || xOf(c, span[1]) < left || xOf(c, span[0]) > right) continue;
      const x0 = toPixel(xOf(c, span[0]), width), x1 = toPixel(xOf(c, span[1]), width);
      ctx.fillRect(x0, top + row * ROW + ROW / 2, Math.max(1, x1 - x0), 1);
    }
    // The waits: a bar from the step that began one to the step that ended it.
    for (const w of c.waits) {
      const row = c.actors[w.actor][2];
      const xb = xOf(c, w.begin), xe = xOf(c, w.end);
      if (row < 0 || xe < left || xb > right) continue;
      const x0 = toPixel(xb, width), x1 = toPixel(xe, width);
      const y = top + row * ROW + (ROW - BAR) / 2;
      ctx.globalAlpha = 0.5;
      ctx.fillStyle = COLORS[w.kind] || COLORS.future;
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), BAR);
      ctx.globalAlpha = 1;
      // The bar's label, with the actor's URL where there is room, else alone, else none:
      // a label is written whole or not at all, never cut at the bar's end.
      const start = Math.max(x0, GUTTER) + 3, room = Math.min(x1, width) - start - 3;
      if (room > FONT * 3) {
        const detail = c.actors[w.actor][1] >= 0 ? c.s(c.actors[w.actor][1]) || "" : "";
        const said = waitText(w.label), before = said.split(" -> ")[0];  // "fd 7 readable"
        const label = [said + (detail ? "  " + detail : ""), said, before]
          .find((text) => ctx.measureText(text).width <= room);
        if (label) {
          ctx.fillStyle = "#1d2330";
          ctx.fillText(label, start, y + BAR / 2 + 0.5);
          written.push([label, ctx.measureText(label).width, room]);
        }
      }
    }
    // The steps: a mark each; the current one ringed.
    const from = firstAtOrAfter(c, left), to = firstAtOrAfter(c, right);
    ctx.fillStyle = "#1d2330";
    for (let i = from; i < to && i < c.n; i++) {
      const row = c.actors[c.steps.a[i]][2];
      ctx.fillRect(toPixel(xOf(c, i), width) - 1, top + row * ROW + 3, 2, ROW - 6);
    }
    if (cur >= 0) {
      const row = c.actors[curActor][2];
      ctx.strokeStyle = "#c0392b";
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(toPixel(xOf(c, cur), width), top + row * ROW + ROW / 2, ROW / 3.5, 0, 2 * Math.PI);
      ctx.stroke();
      ctx.lineWidth = 1;
    }
  }

  // A lane's name.  A task keeps one lane and its name (worker-0), but stage 1's Fetchers
  // come and go, one per URL, and take turns in a lane (page.py): each lane is one of the
  // --max-tasks places a Fetcher fills, so it is named by that job, "fetch slot 1".
  function rowLabel(c, r) {
    if (c.raw.stage !== "stage1_callbacks" || c.rows[r] !== "Fetcher") return c.rows[r];
    return t("lane.fetcher", { n: c.rows.slice(0, r + 1).filter((l) => l === "Fetcher").length });
  }

  function drawLabels(c) {
    const top = blocks[c.index];
    ctx.fillStyle = "#1d2330";
    ctx.font = "600 " + (FONT + 1) + "px system-ui, sans-serif";
    const title = t("title." + c.raw.stage);
    ctx.fillText(title, 8, top - HEAD / 2);
    const titled = ctx.measureText(title).width;
    written.push([title, titled, canvas.clientWidth - 8]);
    ctx.font = FONT + "px system-ui, sans-serif";
    ctx.fillStyle = "#667085";
    const [urls, steps, s, stopped] = c.raw.summary || [];
    const note = c.raw.summary ? t(stopped ? "note.interrupted" : "note.done", { urls, steps, s }) : c.raw.note;
    ctx.fillText(note, 8 + titled + 10, top - HEAD / 2);
    written.push([note, ctx.measureText(note).width, canvas.clientWidth - 18 - titled]);
    const cur = currentStep(c);
    const curRow = cur >= 0 ? c.actors[c.steps.a[cur]][2] : -1;
    for (let r = 0; r < c.rows.length; r++) {
      ctx.fillStyle = r === curRow ? "#c0392b" : "#475467";
      const label = rowLabel(c, r);
      ctx.fillText(label, 16, top + r * ROW + ROW / 2);
      written.push([label, ctx.measureText(label).width, GUTTER - 4 - 16]);
    }
  }

  // Keep the cursor in view while stepping or playing.
  function follow() {
    const x = cursorX(), span = view[1] - view[0];
    if (x < view[0] || x > view[1]) view = [x - span / 2, x + span / 2];
  }

  function zoom(factor, around) {
    const full = fullView();
    const at = around === undefined ? cursorX() : around;
    let span = Math.min(full[1] - full[0], (view[1] - view[0]) * factor);
    span = Math.max(span, xmode === "time" ? 50 : 4);  // 50 microseconds, or four steps
    const share = (at - view[0]) / (view[1] - view[0]);
    view = [at - share * span, at - share * span + span];
    draw();
  }

  function pan(pixels) {
    const span = view[1] - view[0];
    const shift = (pixels / (canvas.clientWidth - GUTTER)) * span;
    view = [view[0] + shift, view[1] + shift];
    draw();
  }

  // A click jumps to the nearest step: of the crawl clicked on, or of any crawl above them.
  function jumpTo(px, py) {
    const width = canvas.clientWidth;
    const x = fromPixel(px, width);
    let candidates = crawls;
    for (const c of crawls) {
      if (py >= blocks[c.index] - HEAD && py < blocks[c.index] + c.rows.length * ROW) candidates = [c];
    }
    let best = -1, distance = Infinity;
    for (const c of candidates) {
      const i = firstAtOrAfter(c, x);
      for (const j of [i - 1, i]) {
        if (j < 0 || j >= c.n) continue;
        const d = Math.abs(xOf(c, j) - x);
        if (d < distance) { distance = d; best = c.position[j]; }
      }
    }
    if (best >= 0) go(best);
  }

  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, moved: false }; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x;
    if (Math.abs(dx) > 3 || drag.moved) {
      drag.moved = true;
      pan(-dx);
      drag.x = e.clientX;
    }
  });
  window.addEventListener("mouseup", (e) => {
    if (drag && !drag.moved && e.target === canvas) {
      const box = canvas.getBoundingClientRect();
      jumpTo(e.clientX - box.left, e.clientY - box.top);
    }
    drag = null;
  });
  // The wheel scrolls the page as usual; with Ctrl it zooms, sideways (or Shift) it pans.
  canvas.addEventListener("wheel", (e) => {
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      const box = canvas.getBoundingClientRect();
      zoom(Math.exp(e.deltaY * 0.002), fromPixel(e.clientX - box.left, canvas.clientWidth));
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      pan(e.shiftKey ? e.deltaY : e.deltaX);
    }
  }, { passive: false });

  // ---- the panels -------------------------------------------------------------------
  const panels = document.getElementById("panels");
  panels.style.setProperty("--crawls", String(crawls.length));
  if (crawls.length === 1) panels.classList.add("single");

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // An element whose text is the table's, for a key: set now, and again with the language.
  function label(tag, key) {
    const node = element(tag);
    node.dataset.t = key;
    return node;
  }

  for (const c of crawls) {
    const panel = element("section", "panel");
    panel.dataset.crawl = String(c.index);
    const h2 = element("h2");
    h2.append(label("span", "title." + c.raw.stage), element("span", "step-no"), element("span", "at"));
    const facts = element("dl", "facts");
    for (const name of ["actor", "what", "why", "url", "chain"]) {
      facts.append(label("dt", "facts." + name), element("dd", name));
    }
    const ran = element("div", "ran");
    ran.append(facts);
    const source = element("div", "source");
    source.append(label("h3", "source.heading"),
      element("div", "file"), element("div", "code"));
    const state = element("div", "state");
    const sockets = element("table", "sockets");
    const head = (keys) => {  // a table's head, its columns named by the table of texts
      const thead = element("thead"), tr = element("tr");
      tr.append(...keys.map((key) => label("th", key)));
      thead.append(tr);
      return [thead, element("tbody")];
    };
    sockets.append(...head(["sockets.fd", "sockets.mode", "sockets.for", "sockets.runs"]));
    const waiting = element("table", "waiting");
    waiting.append(...head(["waiting.who", "waiting.for"]));
    state.append(label("h3", "state.heading"), element("div", "counts"),
      label("h3", "state.sockets"), sockets,
      label("h3", c.raw.stage === "stage1_callbacks" ? "state.fetchers" : "state.tasks"), waiting);
    panel.append(h2, ran, source, state);
    if (c.raw.stage !== "stage1_callbacks") {  // stage 1 has callbacks, not tasks
      const tree = element("details", "tree");  // the panel's whole width: its lines are long
      tree.append(label("summary", "state.tree"), element("pre"));
      panel.append(tree);
    }
    panels.append(panel);
    c.panel = panel;
    c.shownFile = -1;
    c.codeCache = new Map();
  }

  // Python, lightly coloured: keywords, strings, comments.
  const KEYWORDS = new Set(("and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try while " +
    "with yield None True False self").split(" "));
  function colour(line, state) {
    const out = [];
    let i = 0;
    const push = (cls, text) => {
      if (!text) return;
      const span = element("span", cls ? "tok-" + cls : "", text);
      out.push(cls ? span : document.createTextNode(text));
    };
    while (i < line.length) {
      if (state.quote) {  // inside a triple-quoted string
        const end = line.indexOf(state.quote, i);
        if (end < 0) { push("s", line.slice(i)); return out; }
        push("s", line.slice(i, end + 3));
        i = end + 3;
        state.quote = null;
        continue;
      }
      const rest = line.slice(i);
      let m;
      if (rest[0] === "#") { push("c", rest); break; }
      if ((m = /^[rbfu]*("""|''')/i.exec(rest))) {
        state.quote = m[1];
        push("s", m[0]);
        i += m[0].length;
        continue;
      }
      if ((m = /^[rbfu]*("([^"\\]|\\.)*"|'([^'\\]|\\.)*')/i.exec(rest))) { push("s", m[0]); i += m[0].length; continue; }
      if ((m = /^[A-Za-z_]\w*/.exec(rest))) {
        push(KEYWORDS.has(m[0]) ? "k" : "", m[0]);
        i += m[0].length;
        continue;
      }
      m = /^[^A-Za-z_#"']+/.exec(rest) || [rest[0]];
      push("", m[0]);
      i += m[0].length;
    }
    return out;
  }

  function codeFor(c, file) {
    let code = c.codeCache.get(file);
    if (!code) {
      code = element("div", "code");
      const state = { quote: null };
      c.files[file].lines.forEach((text, n) => {
        const line = element("div", "ln");
        line.dataset.line = String(n + 1);
        line.append(element("i", "", String(n + 1)), ...colour(text, state));
        code.append(line);
      });
      c.codeCache.set(file, code);
    }
    return code;
  }

  // The frame shown in the source: the one clicked, else the innermost with its source here.
  function shownFrame(c, chain) {
    if (chosenFrame[c.index] >= 0 && chain[chosenFrame[c.index]]) return chosenFrame[c.index];
    for (let f = chain.length - 1; f >= 0; f--) if (chain[f][1] >= 0) return f;
    return -1;
  }

  function showSource(c, chain) {
    const box = c.panel.querySelector(".source");
    const f = shownFrame(c, chain);
    const file = f >= 0 ? chain[f][1] : -1;
    let code = box.querySelector(".code");
    if (file < 0) {
      box.querySelector(".file").textContent = chain.length ? t("source.other") : "";
      code.querySelectorAll(".current, .caller, .body").forEach((n) => n.classList.remove("current", "caller", "body"));
      return;
    }
    const fresh = codeFor(c, file);
    if (code !== fresh) { code.replaceWith(fresh); code = fresh; }
    box.querySelector(".file").textContent = c.files[file].path;
    code.querySelectorAll(".current, .caller, .body").forEach((n) => n.classList.remove("current", "caller", "body"));
    const lines = code.children;
    chain.forEach((frame, index) => {
      if (frame[1] !== file || index === f) return;
      if (lines[frame[2] - 1]) lines[frame[2] - 1].classList.add("caller");
    });
    const [, , line, end] = chain[f];
    for (let n = line + 1; n <= end; n++) if (lines[n - 1]) lines[n - 1].classList.add("body");
    const target = lines[line - 1];
    if (target) {
      target.classList.add("current");
      code.scrollTop = Math.max(0, target.offsetTop - code.clientHeight / 3);
    }
  }

  function showChain(c, chain) {
    const dd = c.panel.querySelector(".chain");
    dd.textContent = "";
    const f = shownFrame(c, chain);
    chain.forEach((frame, index) => {
      if (index) dd.append(element("span", "sep", "\u203a"));
      const button = element("button", index === f ? "shown" : "", c.s(frame[0]) + ":" + frame[2]);
      button.disabled = frame[1] < 0;
      button.title = t(frame[1] < 0 ? "frame.other" : "frame.show");
      button.addEventListener("click", () => { chosenFrame[c.index] = index; show(); });
      dd.append(button);
    });
  }

  function showState(c, i) {
    const [sockets, waits] = c.states[c.steps.st[i]];
    const counts = c.panel.querySelector(".counts");
    counts.textContent = "";
    const ready = t(c.raw.stage === "stage1_callbacks" ? "counts.due" : "counts.ready");
    const next = c.steps.next[i];
    counts.append(ready, element("b", "ready", String(c.steps.ready[i])),
      t("counts.timers"), element("b", "timers", String(c.steps.timers[i])),
      next >= 0 ? t("counts.next", { ms: next }) : "");
    const actor = c.steps.a[i];
    const body = c.panel.querySelector(".sockets tbody");
    body.textContent = "";
    for (const [fd, mode, owner, name] of sockets) {
      const tr = element("tr", owner >= 0 && owner === actor ? "current" : "");
      const whose = owner >= 0 ? actorName(c, owner) : c.s(name) === "on_ctrl_c" ? "Ctrl-C" : "\u2014";
      tr.append(element("td", "", String(fd)), element("td", "", TEXTS.en["mode." + mode] ? t("mode." + mode) : mode),
        element("td", "", whose), element("td", "", waitText(c.s(name))));
      body.append(tr);
    }
    const rows = c.panel.querySelector(".waiting tbody");
    rows.textContent = "";
    for (const [who, kind, label] of waits) {
      const tr = element("tr", who === actor ? "current" : "");
      const td = element("td");
      // Running, or ready to run, is not a wait: no colour.
      const idle = ["running", "ready to run"].includes(c.s(label));
      const dot = element("span", idle ? "kind none" : "kind");
      dot.style.background = COLORS[KINDS[kind]];
      td.append(dot, waitText(c.s(label)));
      tr.append(element("td", "", actorName(c, who)), td);
      rows.append(tr);
    }
  }

  // Where every task waits: the tree as the crawl prints it on SIGUSR1 (shared/tools/instruments/tasktree.py),
  // recorded as the step began: one tree from the main task down, each task once.
  // Its lines are the crawl's; the phrases tasktree.py writes in them ("[2 frames of aiohttp]",
  // "(shown above, ...)") are the table's "tree." texts, read as patterns as waits are.
  const TREE = patterns("tree.", false);
  function treeLine(text) {
    if (lang === "en") return text;
    for (const { key, names, re } of TREE) {
      text = text.replace(re, (...found) => t(key, Object.fromEntries(names.map((name, n) => [name, found[n + 1]]))));
    }
    return text;
  }
  function taskTree(c, i) {
    return c.raw.trees[c.steps.tr[i]].map((s) => treeLine(c.s(s))).join("\n");
  }

  function showPanel(c) {
    const i = currentStep(c);
    const panel = c.panel;
    panel.classList.toggle("active", total > 0 && mergedCrawl[cursor] === c.index && crawls.length > 1);
    panel.querySelector(".step-no").textContent = i >= 0 ? t("step.of", { n: i + 1, total: c.n }) : t("step.none");
    panel.querySelector(".at").textContent = i >= 0 ? seconds((c.steps.t[i] / 1e6).toFixed(4)) : "";
    if (i < 0) {
      for (const name of ["actor", "what", "why", "url", "chain"]) panel.querySelector("." + name).textContent = "";
      panel.querySelector(".what").append(element("span", "idle", t("step.idle")));
      showSource(c, []);
      panel.querySelector(".counts").textContent = "";
      panel.querySelector(".sockets tbody").textContent = "";
      panel.querySelector(".waiting tbody").textContent = "";
      const tree = panel.querySelector(".tree pre");
      if (tree) tree.textContent = "";
      return;
    }
    panel.querySelector(".actor").textContent = actorName(c, c.steps.a[i]);
    panel.querySelector(".what").textContent = c.s(c.steps.what[i]);
    const key = c.s(c.steps.why[i]);  // the table's sentence, filled in with recorded data
    const [detail, waited] = [c.s(c.steps.wd[i]), waitText(c.s(c.steps.ww[i]))];
    panel.querySelector(".why").textContent = t(key, { detail: c.raw.stage === "stage1_callbacks" ? waitText(detail) : detail, waited });
    panel.querySelector(".url").textContent = c.s(c.steps.url[i]) || "\u2014";
    const chain = c.chains[c.steps.fr[i]];
    showChain(c, chain);
    showSource(c, chain);
    showState(c, i);
    const tree = panel.querySelector(".tree pre");
    if (tree) tree.textContent = taskTree(c, i);
  }

  // ---- stepping ---------------------------------------------------------------------
  const slider = document.getElementById("slider");
  slider.max = String(Math.max(0, total - 1));
  const stepNo = document.getElementById("step-no");
  const clock = document.getElementById("clock");

  function show() {
    stepNo.textContent = t("step.of", { n: total ? cursor + 1 : 0, total });
    clock.textContent = xmode === "time" ? seconds((cursorX() / 1e6).toFixed(4)) : String(cursorX());
    if (xmode !== "time" && total) {
      clock.textContent = seconds((crawls[mergedCrawl[cursor]].steps.t[mergedStep[cursor]] / 1e6).toFixed(4));
    }
    slider.value = String(cursor);
    for (const c of crawls) showPanel(c);
    follow();
    draw();
  }

  function go(position) {
    const next = Math.max(0, Math.min(total - 1, position));
    if (next !== cursor) chosenFrame.fill(-1);
    cursor = next;
    show();
  }

  function play(on) {
    if (player) { clearInterval(player); player = null; }
    if (on) {
      if (cursor >= total - 1) go(0);
      const rate = Number(document.getElementById("speed").value);
      player = setInterval(() => {
        if (cursor >= total - 1) play(false); else go(cursor + 1);
      }, 1000 / rate);
    }
    document.getElementById("play").textContent = t(player ? "play.pause" : "play.label");
  }

  document.getElementById("first").addEventListener("click", () => go(0));
  document.getElementById("back").addEventListener("click", () => go(cursor - 1));
  document.getElementById("forward").addEventListener("click", () => go(cursor + 1));
  document.getElementById("last").addEventListener("click", () => go(total - 1));
  document.getElementById("play").addEventListener("click", () => play(!player));
  document.getElementById("speed").addEventListener("change", () => { if (player) play(true); });
  slider.addEventListener("input", () => go(Number(slider.value)));
  document.getElementById("xmode").addEventListener("change", (e) => {
    xmode = e.target.value;
    view = fullView();
    show();
  });
  document.getElementById("zoom-in").addEventListener("click", () => zoom(0.5));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(2));
  document.getElementById("zoom-fit").addEventListener("click", () => { view = fullView(); draw(); });
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLSelectElement || e.target === slider || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys = {
      ArrowRight: () => go(cursor + (e.shiftKey ? 10 : 1)),
      ArrowLeft: () => go(cursor - (e.shiftKey ? 10 : 1)),
      Home: () => go(0),
      End: () => go(total - 1),
      " ": () => play(!player),
      "+": () => zoom(0.5),
      "=": () => zoom(0.5),
      "-": () => zoom(2),
      "0": () => { view = fullView(); draw(); },
      b: () => setBig(!document.body.classList.contains("big")),
      l: () => setLang(lang === "en" ? "zh-CN" : "en"),
    };
    if (keys[e.key]) {
      e.preventDefault();
      keys[e.key]();
    }
  });
  window.addEventListener("resize", draw);

  // ---- start ------------------------------------------------------------------------
  // Every text from the table of the page's language: the elements that name a key, the
  // heading, the legend, then the panels and the lanes, drawn again.
  function applyTexts() {
    document.documentElement.lang = lang;
    for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
    for (const node of document.querySelectorAll("[data-t-title]")) node.title = t(node.dataset.tTitle);
    for (const node of document.querySelectorAll("[data-t-label]")) {
      node.setAttribute("aria-label", t(node.dataset.tLabel));
    }
    for (const option of document.getElementById("speed").options) {
      option.textContent = t("speed.option", { n: option.value });
    }
    const h = DATA.heading;
    const site = t(h.pages === null ? "heading.default-site" : "heading.site", { n: h.pages, s: h.latency });
    const heading = [t(h.stage === "all" ? "heading.all" : "title." + h.stage), site, ...h.options];
    document.getElementById("heading").textContent = heading.join(" \u00b7 ");
    document.title = heading[0] + " \u00b7 " + t("page.title");
    const legend = document.getElementById("legend");
    legend.textContent = "";
    legend.append(t("legend.intro"));
    for (const kind of KINDS) {
      const item = element("span");
      const swatch = element("i");
      swatch.style.background = COLORS[kind];
      item.append(swatch, t("kind." + kind));
      legend.append(item);
    }
    legend.append(t("legend.use"));
    play(player !== null);  // the play button's text: play, or pause
  }
  // The address says how to open: "page.html#step=30" at step 30, "#big" in large type,
  // "#big&step=30" both.  Without a step, the page opens at a busy one (page.py chose it).
  function stepInAddress() {
    const wanted = /(?:^#|&)step=(\d+)/.exec(location.hash);
    return wanted ? Math.max(0, Math.min(total - 1, Number(wanted[1]) - 1)) : null;
  }
  const bigInAddress = () => /(?:^#|&)big(?:&|$)/.test(location.hash);

  // Projector mode: type of 18 px and more, and the code beside the lanes, not below them.
  // The address keeps it (history.replaceState: no new history entry, no hashchange), so
  // that a reload, or the link given to a class, opens the same view.
  function setBig(on) {
    document.body.classList.toggle("big", on);
    document.getElementById("big").setAttribute("aria-pressed", String(on));
    layout();
    show();  // the code boxes changed size: each scrolls to its line again
    const rest = location.hash.replace(/^#/, "").split("&").filter((p) => p && p !== "big");
    const parts = on ? ["big", ...rest] : rest;
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
  }
  // The language button, or L: the other language; the address keeps it, as it keeps #big.
  function setLang(wanted) {
    lang = wanted;
    applyTexts();
    show();
    const rest = location.hash.replace(/^#/, "").split("&").filter((p) => p && !p.startsWith("lang="));
    history.replaceState(null, "", "#" + [...rest, "lang=" + lang].join("&"));
  }
  document.getElementById("big").addEventListener("click", () => setBig(!document.body.classList.contains("big")));
  document.getElementById("lang").addEventListener("click", () => setLang(lang === "en" ? "zh-CN" : "en"));
  window.addEventListener("hashchange", () => {
    const step = stepInAddress();
    if (step !== null) go(step);
    if (bigInAddress() !== document.body.classList.contains("big")) setBig(bigInAddress());
    if (langInAddress() && langInAddress() !== lang) setLang(langInAddress());
  });
  cursor = stepInAddress() ?? Math.max(0, Math.min(total - 1, DATA.start || 0));
  view = fullView();
  if (total > 300) {  // a long crawl opens on a hundred steps around the cursor; "fit" shows all
    const from = Math.max(0, cursor - 20), to = Math.min(total - 1, from + 100);
    const x0 = crawls[mergedCrawl[from]].steps.t[mergedStep[from]];
    const x1 = crawls[mergedCrawl[to]].steps.t[mergedStep[to]];
    const pad = (x1 - x0) * 0.02 + 50;
    view = [x0 - pad, x1 + pad];
  }
  applyTexts();
  show();
  if (bigInAddress()) setBig(true);
  document.body.dataset.ready = "true";
})();
