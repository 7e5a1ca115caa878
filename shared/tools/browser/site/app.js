// The page: the list of exercises (#) and one exercise (#name), talking to Python in
// worker.js. Plain ES2020, no modules, no libraries.
"use strict";

(() => {
  // A check's limit when Python has not said the exercise's own (exercises(): `limit`).
  const CHECK_LIMIT_S = 90;
  const SAVE_DELAY_MS = 500;
  const STORE_PREFIX = "crawler500:";
  const LANG_STORE = "crawler500.lang"; // a dot, so it never meets an exercise's key
  const LANGS = ["en", "zh-CN"];

  const $ = (selector) => document.querySelector(selector);
  const el = {
    status: $("#status"),
    lang: $("#lang"),
    skip: $("#skip"),
    main: $("#main"),
    listView: $("#list-view"),
    listMessage: $("#list-message"),
    list: $("#exercise-list"),
    exerciseView: $("#exercise-view"),
    instructions: $("#instructions"),
    editors: $("#editors"),
    check: $("#check"),
    hint: $("#hint"),
    export: $("#export"),
    reset: $("#reset"),
    exportNote: $("#export-note"),
    saved: $("#saved"),
    output: $("#output"),
  };

  // ---------------------------------------------------------------- texts, language

  let texts = { en: {}, "zh-CN": {} };
  let textsLoaded = false; // until then the page keeps the English of index.html
  let lang = initialLang();

  function initialLang() {
    const stored = storeGet(LANG_STORE);
    if (LANGS.includes(stored)) return stored;
    const browser = (navigator.language || "en").toLowerCase();
    return browser.startsWith("zh") ? "zh-CN" : "en";
  }

  // t("key", {field: value}): the sentence in the page's language, its {fields} filled.
  function t(key, fields) {
    const own = texts[lang] && texts[lang][key];
    const text = own !== undefined ? own : texts.en[key] !== undefined ? texts.en[key] : key;
    return text.replace(/\{(\w+)\}/g, (whole, name) =>
      fields && fields[name] !== undefined ? String(fields[name]) : whole
    );
  }

  function applyTexts() {
    document.documentElement.lang = lang;
    for (const node of document.querySelectorAll("[data-t]")) {
      node.textContent = t(node.dataset.t);
    }
    el.lang.textContent = t("lang_button");
    el.lang.dataset.lang = lang;
    el.lang.setAttribute("aria-label", t("lang_button_label"));
    el.lang.lang = lang === "en" ? "zh-CN" : "en"; // the button names the other language
    renderExportNote();
    setTitle();
    showStatus();
  }

  function setTitle() {
    document.title = current
      ? t("page_title_exercise", { name: current.name })
      : t("page_title");
  }

  // ---------------------------------------------------------------- storage

  function storeGet(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (error) {
      return null;
    }
  }

  function storeSet(key, value) {
    window.localStorage.setItem(key, value); // may throw: the caller says so
  }

  function storeRemove(key) {
    try {
      window.localStorage.removeItem(key);
    } catch (error) {
      /* nothing kept, nothing to remove */
    }
  }

  // ---------------------------------------------------------------- the worker

  let worker = null;
  let workerReady = false;
  let workerFailed = null; // the error, when Python could not start
  let readyWaiters = [];
  let nextId = 1;
  const pending = new Map(); // id -> {resolve, reject, timer}
  let statusKey = "status_loading";
  let statusFields = {};
  let restarted = false;
  let generation = 0; // one more each time a worker starts: its workspaces are its own

  class TimeoutError extends Error {}
  class RestartError extends Error {}
  class FatalError extends Error {}

  function startWorker() {
    generation += 1;
    workerReady = false;
    workerFailed = null;
    delete document.body.dataset.ready;
    setStatus(restarted ? "status_restarting" : "status_loading");
    updateButtons();
    if (typeof Worker === "undefined") {
      workerFailed = "no Web Workers";
      setStatus("status_no_worker");
      return;
    }
    const w = new Worker("worker.js");
    worker = w;
    w.onmessage = (event) => {
      if (w === worker) fromWorker(event.data);
    };
    w.onerror = (event) => {
      if (w !== worker || workerReady) return;
      event.preventDefault();
      failed(event.message || "the worker did not start");
    };
  }

  function restartWorker(why) {
    if (worker) worker.terminate();
    worker = null;
    for (const [id, call] of pending) {
      clearTimeout(call.timer);
      call.reject(new RestartError(why));
      pending.delete(id);
    }
    restarted = true;
    startWorker();
  }

  function failed(error) {
    workerReady = false;
    workerFailed = String(error);
    setStatus("status_failed", { error: workerFailed });
    const waiters = readyWaiters;
    readyWaiters = [];
    for (const waiter of waiters) waiter.reject(new Error(workerFailed));
    updateButtons();
  }

  function fromWorker(message) {
    if (!message || typeof message !== "object") return;
    if ("id" in message) {
      const call = pending.get(message.id);
      if (!call) return; // timed out already
      pending.delete(message.id);
      clearTimeout(call.timer);
      if (message.ok) call.resolve(message.value);
      else if (message.fatal) {
        call.reject(new FatalError(message.error));
        restartWorker("fatal");
      } else call.reject(new Error(message.error));
      return;
    }
    if ("progress" in message) {
      const key = "progress_" + message.progress;
      if (texts.en[key] !== undefined) setStatus(key, message);
      else setStatus(null, { text: String(message.progress) });
      return;
    }
    if ("ready" in message) {
      if (!message.ready) {
        failed(message.error || "?");
        return;
      }
      workerReady = true;
      setStatus("status_ready");
      const waiters = readyWaiters;
      readyWaiters = [];
      for (const waiter of waiters) waiter.resolve();
      // body[data-ready] says the page can be used: wait for the view that was
      // waiting for Python to be drawn first.
      const w = worker;
      Promise.resolve(rendering)
        .catch(() => {})
        .then(() => {
          if (w === worker && workerReady) document.body.dataset.ready = "1";
          updateButtons();
        });
      updateButtons();
    }
  }

  function whenReady() {
    if (workerReady) return Promise.resolve();
    if (workerFailed !== null) return Promise.reject(new Error(workerFailed));
    return new Promise((resolve, reject) => readyWaiters.push({ resolve, reject }));
  }

  // call("check", [name, files, lang], {limit: 90}) -> the value Python gave back.
  async function call(name, args, options) {
    await whenReady();
    const w = worker;
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, timer: null };
      const limit = options && options.limit;
      if (limit) {
        entry.timer = setTimeout(() => {
          if (!pending.has(id) || worker !== w) return;
          pending.delete(id);
          reject(new TimeoutError(name));
          restartWorker("timeout");
        }, limit * 1000);
      }
      pending.set(id, entry);
      w.postMessage({ id, call: name, args });
    });
  }

  // A call that a restart of Python cut short (another call's check ran out of time) is
  // made once more, on the fresh Python.
  async function again(make) {
    try {
      return await make();
    } catch (error) {
      if (error instanceof RestartError) return make();
      throw error;
    }
  }

  // ---------------------------------------------------------------- the status line

  function setStatus(key, fields) {
    statusKey = key;
    statusFields = fields || {};
    showStatus();
  }

  function showStatus() {
    if (!textsLoaded) return;
    el.status.textContent = statusKey ? t(statusKey, statusFields) : statusFields.text || "";
    el.status.classList.toggle("error", statusKey === "status_failed" || statusKey === "status_no_worker");
    el.status.classList.toggle("ok", statusKey === "status_ready");
  }

  // ---------------------------------------------------------------- the list

  let listCache = { lang: null, list: null };

  async function exercises() {
    if (listCache.lang === lang && listCache.list) return listCache.list;
    const asked = lang;
    const list = JSON.parse(await again(() => call("exercises", [asked])));
    listCache = { lang: asked, list };
    return list;
  }

  async function showList(seq) {
    current = null;
    setTitle();
    el.exerciseView.hidden = true;
    el.listView.hidden = false;
    if (!(listCache.lang === lang && listCache.list)) {
      el.list.textContent = "";
      showListMessage(t("list_loading"));
    }
    let list;
    try {
      list = await exercises();
    } catch (error) {
      if (seq !== routeSeq) return;
      showListMessage(t("list_error", { error: String(error.message || error) }), true);
      shown("");
      return;
    }
    if (seq !== routeSeq) return;
    showListMessage(null);
    el.list.textContent = "";
    for (const exercise of list) el.list.append(listItem(exercise));
    shown("");
  }

  function showListMessage(text, isError) {
    el.listMessage.hidden = !text;
    el.listMessage.textContent = text || "";
    el.listMessage.classList.toggle("error", !!isError);
  }

  function listItem(exercise) {
    const li = document.createElement("li");
    li.dataset.name = exercise.name;
    li.className = exercise.runnable ? "runnable" : "not-runnable";
    const head = document.createElement("p");
    head.className = "head";
    let name;
    if (exercise.runnable) {
      name = document.createElement("a");
      name.href = "#" + encodeURIComponent(exercise.name);
    } else {
      name = document.createElement("span");
      li.setAttribute("aria-disabled", "true");
    }
    name.className = "name";
    name.textContent = exercise.name;
    const stage = document.createElement("span");
    stage.className = "stage";
    stage.textContent = t("list_stage", { stage: exercise.stage });
    head.append(name, " ", stage);
    const summary = document.createElement("p");
    summary.className = "summary";
    summary.textContent = exercise.summary;
    li.append(head, summary);
    if (!exercise.runnable) {
      const why = document.createElement("p");
      why.className = "why-not";
      const label = document.createElement("strong");
      label.textContent = t("list_not_runnable");
      why.append(label, exercise.why_not || "");
      li.append(why);
    }
    return li;
  }

  // ---------------------------------------------------------------- one exercise

  // The exercise on the page: {name, state, paths, ready (the editors hold its files),
  // limit (its whole check's seconds, as `check` allows them in a terminal)}.
  let current = null;
  let busy = false;
  let saveTimer = null;

  // How long a check may run before Python is stopped: the terminal's limit of a whole
  // check, so that tests which each wait out their own limit still get their verdicts.
  function checkLimit() {
    return (current && current.limit) || CHECK_LIMIT_S;
  }

  async function showExercise(name, seq, keepOutput) {
    const previousOutput = keepOutput ? outputSnapshot() : null;
    current = { name, state: null, paths: [], ready: false };
    setTitle();
    el.listView.hidden = true;
    el.exerciseView.hidden = false;
    el.exerciseView.classList.remove("message-only");
    el.instructions.lang = lang;
    el.instructions.textContent = t("instructions_loading");
    el.editors.textContent = "";
    el.saved.textContent = "";
    renderExportNote();
    if (previousOutput) restoreOutput(previousOutput);
    else showOutput(t("output_empty"), "empty");
    updateButtons();

    const here = () => seq === routeSeq && current && current.name === name;
    let list = null;
    try {
      list = await exercises();
    } catch (error) {
      /* open() below says what is wrong */
    }
    if (!here()) return;
    if (list) {
      const exercise = list.find((each) => each.name === name);
      if (!exercise) {
        exerciseMessage(t("not_found", { name }));
        return;
      }
      if (!exercise.runnable) {
        exerciseMessage(t("not_runnable", { name, why: exercise.why_not || "" }));
        return;
      }
      current.limit = exercise.limit;
    }

    const saved = storeGet(STORE_PREFIX + name) || "";
    let opened;
    let lost = null;
    try {
      opened = JSON.parse(await again(() => call("open", [name, lang, saved])));
    } catch (error) {
      if (!here()) return;
      if (!saved || error instanceof RestartError) {
        exerciseMessage(t("open_error", { error: errorText(error) }));
        return;
      }
      // What was kept no longer fits (the exercise changed?): open it fresh, and say so.
      lost = errorText(error);
      try {
        opened = JSON.parse(await call("open", [name, lang, ""]));
      } catch (failure) {
        if (here()) exerciseMessage(t("open_error", { error: errorText(failure) }));
        return;
      }
    }
    if (!here()) return;

    el.instructions.innerHTML = markdown(opened.instructions || "");
    current.state = opened.state === undefined ? null : opened.state;
    current.generation = generation;
    current.paths = orderedPaths(list && list.find((each) => each.name === name), opened.files);
    makeEditors(current.paths, opened.files);
    current.ready = true;
    shown(name);
    if (lost) showOutput(t("saved_lost", { name, error: lost }), "error");
    updateButtons();
  }

  function exerciseMessage(text) {
    const p = document.createElement("p");
    p.className = "notice error";
    p.textContent = text;
    el.instructions.textContent = "";
    el.instructions.append(p);
    el.editors.textContent = "";
    el.exerciseView.classList.add("message-only"); // no editors, no buttons: only why
    updateButtons();
    if (current) shown(current.name);
  }

  function orderedPaths(exercise, files) {
    const given = Object.keys(files || {});
    const listed = exercise && Array.isArray(exercise.files) ? exercise.files : [];
    const paths = listed.filter((path) => given.includes(path));
    for (const path of given) if (!paths.includes(path)) paths.push(path);
    return paths;
  }

  function makeEditors(paths, files) {
    el.editors.textContent = "";
    paths.forEach((path, index) => {
      const box = document.createElement("div");
      box.className = "editor";
      const label = document.createElement("label");
      label.htmlFor = "file-" + index;
      label.className = "path";
      label.textContent = path;
      const area = document.createElement("textarea");
      area.id = "file-" + index;
      area.dataset.path = path;
      area.spellcheck = false;
      area.setAttribute("wrap", "off");
      area.setAttribute("autocapitalize", "off");
      area.setAttribute("autocomplete", "off");
      area.setAttribute("autocorrect", "off");
      area.setAttribute("aria-describedby", "editor-help");
      area.title = t("editor_help");
      area.rows = 24;
      area.value = files[path] || "";
      area.addEventListener("keydown", editorKey);
      area.addEventListener("input", scheduleSave);
      box.append(label, area);
      el.editors.append(box);
    });
  }

  function editorFiles() {
    const files = {};
    for (const area of el.editors.querySelectorAll("textarea[data-path]")) {
      files[area.dataset.path] = area.value;
    }
    return files;
  }

  // ---------------------------------------------------------------- the editor's keys

  const INDENT = "    ";
  let tabLeaves = false; // after Esc, Tab moves the focus on, as it does elsewhere

  function editorKey(event) {
    const area = event.currentTarget;
    if (event.key === "Escape") {
      tabLeaves = true;
      return;
    }
    if (["Shift", "Control", "Alt", "Meta"].includes(event.key)) return;
    if (event.key !== "Tab" || event.ctrlKey || event.altKey || event.metaKey || tabLeaves) {
      tabLeaves = false;
      return;
    }
    event.preventDefault();
    const { selectionStart: start, selectionEnd: end, value } = area;
    const multiline = value.slice(start, end).includes("\n");
    if (!event.shiftKey && !multiline) {
      insert(area, start, end, INDENT);
      return;
    }
    // Indent or dedent every line the selection touches.
    const first = value.lastIndexOf("\n", start - 1) + 1;
    let last = end;
    if (end > start && value[end - 1] === "\n") last = end - 1;
    const lineEnd = value.indexOf("\n", last);
    const stop = lineEnd === -1 ? value.length : lineEnd;
    const lines = value.slice(first, stop).split("\n");
    const changed = lines.map((line) =>
      event.shiftKey ? line.replace(/^ {1,4}/, "") : line === "" ? line : INDENT + line
    );
    const text = changed.join("\n");
    if (text === value.slice(first, stop)) return;
    insert(area, first, stop, text);
    if (multiline) area.setSelectionRange(first, first + text.length);
    else {
      const removed = lines[0].length - changed[0].length;
      const caret = Math.max(first, start - removed);
      area.setSelectionRange(caret, caret);
    }
  }

  // Put text in place of [start, end), keeping the browser's undo where it can.
  function insert(area, start, end, text) {
    area.focus();
    area.setSelectionRange(start, end);
    let done = false;
    try {
      done = document.execCommand && document.execCommand("insertText", false, text);
    } catch (error) {
      done = false;
    }
    if (!done) {
      area.setRangeText(text, start, end, "end");
      area.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  // ---------------------------------------------------------------- keeping work

  function scheduleSave() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(saveNow, SAVE_DELAY_MS);
  }

  function saveNow() {
    clearTimeout(saveTimer);
    saveTimer = null;
    if (!current || !current.ready) return;
    const kept = { files: editorFiles(), state: current.state };
    try {
      storeSet(STORE_PREFIX + current.name, JSON.stringify(kept));
      el.saved.textContent = t("saved");
      el.saved.classList.remove("error");
    } catch (error) {
      el.saved.textContent = t("save_failed", { error: errorText(error) });
      el.saved.classList.add("error");
    }
  }

  // A state that comes back after the page moved on belongs to that exercise all the same.
  function keepState(name, files, state) {
    if (current && current.ready && current.name === name) {
      current.state = state;
      saveNow();
      return;
    }
    let kept = null;
    try {
      kept = JSON.parse(storeGet(STORE_PREFIX + name) || "null");
    } catch (error) {
      kept = null;
    }
    const next = { files: (kept && kept.files) || files, state };
    try {
      storeSet(STORE_PREFIX + name, JSON.stringify(next));
    } catch (error) {
      /* the page shows another exercise: nothing to tell */
    }
  }

  // A fresh Python (after a check ran out of time) has no workspace yet: open the
  // exercise in it again, with the files of the editors and the state kept so far.
  async function ensureOpen(name) {
    await whenReady();
    if (!current || current.name !== name || current.generation === generation) return;
    const kept = JSON.stringify({ files: editorFiles(), state: current.state });
    const asked = generation;
    await call("open", [name, lang, kept]);
    if (current && current.name === name && generation === asked) current.generation = asked;
  }

  // ---------------------------------------------------------------- the buttons

  function updateButtons() {
    const usable = workerReady && !busy && current !== null && current.ready;
    for (const button of [el.check, el.hint, el.export, el.reset]) button.disabled = !usable;
  }

  // Runs one button's call: #output says running, then done, whatever happened.
  async function action(runningKey, work, options) {
    if (!current || !current.ready || busy) return;
    if (!(options && options.save === false)) saveNow();
    busy = true;
    updateButtons();
    el.output.dataset.state = "running";
    if (!(options && options.quiet)) showOutput(t(runningKey), "running");
    const began = Date.now();
    const ticker = setInterval(() => {
      const seconds = Math.floor((Date.now() - began) / 1000);
      if (workerReady) {
        setStatus(runningKey === "running_check" ? "status_running_check" : "status_running", {
          seconds,
          limit: checkLimit(),
        });
      }
    }, 1000);
    try {
      await work();
    } catch (error) {
      if (error instanceof TimeoutError) showOutput(t("timeout_check", { seconds: checkLimit() }), "error");
      else if (error instanceof RestartError) showOutput(t("worker_restarted"), "error");
      else if (error instanceof FatalError) showOutput(t("fatal_check") + "\n" + errorText(error), "error");
      else showOutput(t("call_failed") + "\n" + errorText(error), "error");
    } finally {
      clearInterval(ticker);
      if (workerReady) setStatus("status_ready");
      busy = false;
      el.output.dataset.state = "done";
      updateButtons();
    }
  }

  el.check.addEventListener("click", () =>
    action("running_check", async () => {
      const name = current.name;
      await ensureOpen(name);
      const files = editorFiles();
      const value = await call("check", [name, JSON.stringify(files), lang], {
        limit: checkLimit(),
      });
      const result = JSON.parse(value);
      keepState(name, files, result.state);
      if (current && current.name === name) showOutput(result.output || "", "result");
    })
  );

  el.hint.addEventListener("click", () =>
    action("running_hint", async () => {
      const name = current.name;
      await ensureOpen(name);
      const files = editorFiles();
      const value = await call("hint", [name, JSON.stringify(files), lang], {
        limit: checkLimit(),
      });
      const result = JSON.parse(value);
      keepState(name, files, result.state);
      if (current && current.name === name) showOutput(result.output || "", "result");
    })
  );

  el.export.addEventListener("click", () =>
    action("running_export", async () => {
      const name = current.name;
      await ensureOpen(name);
      const bytes = await call("export", [name, JSON.stringify(editorFiles())]);
      const file = name + "-workspace.zip";
      download(new Blob([bytes], { type: "application/zip" }), file);
      renderExportNote(file);
    }, { quiet: true })
  );

  el.reset.addEventListener("click", () => {
    if (!current || !current.ready || busy) return;
    const name = current.name;
    if (!window.confirm(t("reset_confirm", { name }))) return;
    clearTimeout(saveTimer);
    storeRemove(STORE_PREFIX + name);
    action("running_reset", async () => {
      const opened = JSON.parse(await call("open", [name, lang, ""]));
      if (!current || current.name !== name) return;
      el.instructions.innerHTML = markdown(opened.instructions || "");
      current.state = opened.state === undefined ? null : opened.state;
      current.generation = generation;
      for (const area of el.editors.querySelectorAll("textarea[data-path]")) {
        if (area.dataset.path in opened.files) area.value = opened.files[area.dataset.path];
      }
      el.saved.textContent = "";
      showOutput(t("reset_done"), "result");
    }, { save: false });
  });

  function download(blob, file) {
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = file;
    a.hidden = true;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  let exported = null;

  function renderExportNote(file) {
    if (file) exported = file;
    const name = current ? current.name : "NAME";
    const folder = t("export_folder");
    // A command, its <folder> kept whole on one line.
    const code = (text, last) => {
      const c = document.createElement("code");
      c.textContent = text;
      if (last) {
        const keep = document.createElement("span");
        keep.className = "nowrap";
        keep.textContent = last;
        c.append(keep);
      }
      return c;
    };
    el.exportNote.textContent = "";
    // Said once the student has the file, beside the button that gave it.
    if (!(exported && current && exported === current.name + "-workspace.zip")) return;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "secondary close";
    close.textContent = t("close");
    close.addEventListener("click", () => {
      exported = null;
      el.exportNote.textContent = "";
      el.export.focus();
    });
    el.exportNote.append(
      close,
      t("export_done", { file: exported }),
      t("export_note_before"),
      code(`python -m shared.tools.exercises check ${name} --in `, folder),
      t("export_note_or"),
      code(`nox -s exercise -- check ${name} --in `, folder),
      t("export_note_after"),
      code("grade"),
      t("export_note_record")
    );
  }

  // ---------------------------------------------------------------- the results

  const PASSED = /^\s*(task \d+: passed|任务 \d+：通过)/;
  const FAILED = /FAILED|未通过/;

  function showOutput(text, kind) {
    el.output.textContent = "";
    el.output.className = kind ? "kind-" + kind : "";
    const lines = String(text).split("\n");
    lines.forEach((line, index) => {
      const span = document.createElement("span");
      span.className = "line";
      if (PASSED.test(line)) span.classList.add("passed");
      else if (FAILED.test(line)) span.classList.add("failed");
      span.textContent = line;
      el.output.append(span);
      if (index < lines.length - 1) el.output.append("\n");
    });
  }

  function outputSnapshot() {
    return { nodes: Array.from(el.output.childNodes, (n) => n.cloneNode(true)), className: el.output.className };
  }

  function restoreOutput(snapshot) {
    el.output.textContent = "";
    el.output.className = snapshot.className;
    el.output.append(...snapshot.nodes);
  }

  function errorText(error) {
    return String((error && error.message) || error);
  }

  // ---------------------------------------------------------------- markdown

  // A small renderer for the instructions: headings, paragraphs, lists (nested), fenced
  // code, tables, block quotes, rules; inline code, **bold**, *italic*, links. Every
  // character of the source is escaped; only tags made here reach the page. Links go out
  // only to http(s) and mailto; a relative link (a file of the repository) stays text.
  const markdown = (() => {
    const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
    const escape = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

    const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
    const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)(\s+#+)?\s*$/;
    const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
    const QUOTE = /^\s{0,3}>\s?/;
    const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
    const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
    const CJK = /[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]/;

    const indentOf = (line) => line.match(/^\s*/)[0].replace(/\t/g, "    ").length;
    const blank = (line) => /^\s*$/.test(line);

    function render(source) {
      const lines = String(source).replace(/\r\n?/g, "\n").replace(/\u0000/g, "").split("\n");
      return blocks(lines, false);
    }

    // Does this line start a block that ends a paragraph?
    function interrupts(line) {
      if (FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)) return true;
      const item = line.match(ITEM);
      return !!(item && item[4] !== "" && (/[-*+]/.test(item[2]) || /^1[.)]/.test(item[2])));
    }

    function blocks(lines, tight) {
      const out = [];
      let i = 0;
      while (i < lines.length) {
        const line = lines[i];
        if (blank(line)) {
          i++;
          continue;
        }
        let m;
        if ((m = line.match(FENCE))) {
          const [, indent, fence, info] = m;
          const body = [];
          i++;
          while (i < lines.length) {
            const close = lines[i].trim();
            if (close.startsWith(fence) && close.replace(fence[0] === "`" ? /`/g : /~/g, "") === "") break;
            body.push(lines[i].slice(Math.min(indent.length, indentOf(lines[i]))));
            i++;
          }
          i++; // the closing fence
          const cls = info ? ` class="language-${escape(info)}"` : "";
          out.push(`<pre class="code"><code${cls}>${escape(body.join("\n"))}</code></pre>`);
          continue;
        }
        if ((m = line.match(HEADING))) {
          const level = m[1].length;
          out.push(`<h${level}>${inline(m[2])}</h${level}>`);
          i++;
          continue;
        }
        if (RULE.test(line)) {
          out.push("<hr>");
          i++;
          continue;
        }
        if (QUOTE.test(line)) {
          const body = [];
          while (i < lines.length && !blank(lines[i])) {
            body.push(lines[i].replace(QUOTE, ""));
            i++;
          }
          out.push(`<blockquote>${blocks(body, false)}</blockquote>`);
          continue;
        }
        if (line.trim().startsWith("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
          const rows = [];
          const rule = lines[i + 1];
          rows.push(line);
          i += 2;
          while (i < lines.length && lines[i].trim().startsWith("|")) rows.push(lines[i++]);
          out.push(table(rows, rule));
          continue;
        }
        if ((m = line.match(ITEM)) && m[4] !== "") {
          const [html, next] = list(lines, i);
          out.push(html);
          i = next;
          continue;
        }
        // A paragraph: up to a blank line or a block that interrupts it.
        const body = [line];
        i++;
        while (i < lines.length && !blank(lines[i]) && !interrupts(lines[i])) body.push(lines[i++]);
        const text = inline(joinLines(body));
        out.push(tight ? text : `<p>${text}</p>`);
      }
      return out.join("\n");
    }

    // Lines of one paragraph, joined: no space between two Chinese characters.
    function joinLines(lines) {
      let text = "";
      for (const raw of lines) {
        const line = raw.trim();
        if (!text) text = line;
        else if (CJK.test(text[text.length - 1]) && CJK.test(line[0])) text += line;
        else text += " " + line;
      }
      return text;
    }

    function list(lines, start) {
      const first = lines[start].match(ITEM);
      const base = indentOf(first[1]);
      const ordered = /\d/.test(first[2]);
      const items = [];
      let loose = false;
      let i = start;
      while (i < lines.length) {
        const m = lines[i].match(ITEM);
        if (!m || indentOf(m[1]) > base + 1 || indentOf(m[1]) < base || /\d/.test(m[2]) !== ordered) break;
        const content = indentOf(m[1]) + m[2].length + Math.max(1, Math.min(m[3].length, 4));
        const body = [m[4]];
        i++;
        let sawBlank = false;
        while (i < lines.length) {
          const line = lines[i];
          if (blank(line)) {
            sawBlank = true;
            body.push("");
            i++;
            continue;
          }
          const ind = indentOf(line);
          if (ind >= base + 2) {
            // Belongs to the item: strip the item's indentation.
            body.push(line.replace(/\t/g, "    ").slice(Math.min(ind, content)));
            i++;
            continue;
          }
          if (!sawBlank && !interrupts(line) && !ITEM.test(line) && !line.trim().startsWith("|")) {
            body.push(line.trim()); // a lazy continuation of the item's paragraph
            i++;
            continue;
          }
          break;
        }
        while (body.length && blank(body[body.length - 1])) body.pop();
        // A blank line between items, or inside one, makes the list loose (paragraphs).
        if (sawBlank) {
          const next = lines[i] && lines[i].match(ITEM);
          const innerBlank = body.some(blank);
          if (innerBlank || (next && indentOf(next[1]) >= base && indentOf(next[1]) <= base + 1)) loose = true;
        }
        items.push(body);
      }
      const tag = ordered ? "ol" : "ul";
      const number = ordered ? parseInt(first[2], 10) : 1;
      const open = ordered && number !== 1 ? `<ol start="${number}">` : `<${tag}>`;
      const html = items.map((body) => `<li>${blocks(body, !loose)}</li>`).join("\n");
      return [`${open}\n${html}\n</${tag}>`, i];
    }

    function cells(row) {
      let s = row.trim();
      if (s.startsWith("|")) s = s.slice(1);
      if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
      const parts = [];
      let cell = "";
      let inCode = false;
      for (let k = 0; k < s.length; k++) {
        const c = s[k];
        if (c === "\\" && s[k + 1] === "|") {
          cell += "|";
          k++;
        } else if (c === "`") {
          inCode = !inCode;
          cell += c;
        } else if (c === "|" && !inCode) {
          parts.push(cell.trim());
          cell = "";
        } else cell += c;
      }
      parts.push(cell.trim());
      return parts;
    }

    function table(rows, rule) {
      const aligns = cells(rule).map((spec) =>
        spec.startsWith(":") && spec.endsWith(":") ? "center" : spec.endsWith(":") ? "right" : spec.startsWith(":") ? "left" : ""
      );
      const cell = (tag, text, k) => {
        const align = aligns[k] ? ` style="text-align:${aligns[k]}"` : "";
        return `<${tag}${align}>${inline(text)}</${tag}>`;
      };
      const head = cells(rows[0]).map((text, k) => cell("th", text, k)).join("");
      const body = rows
        .slice(1)
        .map((row) => `<tr>${cells(row).map((text, k) => cell("td", text, k)).join("")}</tr>`)
        .join("\n");
      return `<div class="table"><table>\n<thead><tr>${head}</tr></thead>\n<tbody>\n${body}\n</tbody>\n</table></div>`;
    }

    function safeUrl(url) {
      const u = url.trim();
      return /^(https?:\/\/|mailto:)/i.test(u) ? u : null;
    }

    function anchor(url, html) {
      return `<a href="${escape(url)}" target="_blank" rel="noopener noreferrer">${html}</a>`;
    }

    // Inline markup. What is made is kept aside in slots (\u0000n\u0000) so that the
    // steps after it neither escape it twice nor read markup inside it.
    function inline(source) {
      const slots = [];
      const keep = (html) => `\u0000${slots.push(html) - 1}\u0000`;
      let s = source;
      // code spans
      s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (whole, ticks, code) => {
        const text = /^ .* $/.test(code) && code.trim() ? code.slice(1, -1) : code;
        return keep(`<code>${escape(text)}</code>`);
      });
      // backslash escapes
      s = s.replace(/\\([\\`*_{}\[\]()#+\-.!|<>~])/g, (whole, c) => keep(escape(c)));
      // <https://...>
      s = s.replace(/<((?:https?:\/\/|mailto:)[^\s<>]+)>/gi, (whole, url) => keep(anchor(url, escape(url))));
      // [text](url "title")
      s = s.replace(/\[([^\]]*)\]\(\s*<?((?:[^\s()<>]|\([^\s()<>]*\))*)>?(?:\s+"[^"]*")?\s*\)/g, (whole, text, url) => {
        const inner = emphasis(escape(text));
        const safe = safeUrl(url);
        return keep(safe ? anchor(safe, inner) : `<span class="link-text">${inner}</span>`);
      });
      // bare https://... (not the punctuation after it)
      s = s.replace(/\bhttps?:\/\/[^\s<>\u0000\u3000-\u303f\uff00-\uffef"']+/g, (url) => {
        const trail = url.match(/[.,;:!?)\]]+$/);
        const core = trail ? url.slice(0, -trail[0].length) : url;
        return keep(anchor(core, escape(core))) + (trail ? trail[0] : "");
      });
      s = emphasis(escape(s));
      // put the slots back (a slot may hold slots: links hold code)
      for (let round = 0; round < 4 && s.includes("\u0000"); round++) {
        s = s.replace(/\u0000(\d+)\u0000/g, (whole, n) => slots[Number(n)]);
      }
      return s;
    }

    // **bold** and *italic* (underscores stay as they are: Python's names are full of them).
    function emphasis(html) {
      return html
        .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
        .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>");
    }

    return render;
  })();

  // ---------------------------------------------------------------- routing

  let routeSeq = 0;
  let rendering = null;

  // body[data-shown] is the hash whose view is drawn in full ("#" the list,
  // "#s2-future" an exercise whose editors hold its files); absent while one is drawn.
  function shown(name) {
    document.body.dataset.shown = "#" + name;
  }

  function route(options) {
    const seq = ++routeSeq;
    saveNow();
    delete document.body.dataset.shown; // the exercise being left keeps its last keystrokes
    const hash = location.hash.replace(/^#/, "");
    let name = "";
    try {
      name = decodeURIComponent(hash);
    } catch (error) {
      name = hash;
    }
    const keep = !!(options && options.keepOutput && current && current.name === name);
    rendering = name ? showExercise(name, seq, keep) : showList(seq);
    rendering.catch((error) => console.error(error));
    return rendering;
  }

  window.addEventListener("hashchange", () => {
    route();
    el.main.focus({ preventScroll: true });
    window.scrollTo(0, 0);
  });

  el.lang.addEventListener("click", () => {
    saveNow();
    lang = lang === "en" ? "zh-CN" : "en";
    try {
      storeSet(LANG_STORE, lang);
    } catch (error) {
      /* the choice lasts for this visit only */
    }
    applyTexts();
    route({ keepOutput: true });
  });

  el.skip.addEventListener("click", (event) => {
    event.preventDefault(); // "#main" would be read as an exercise's name
    el.main.focus();
  });

  window.addEventListener("pagehide", saveNow);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") saveNow();
  });

  // ---------------------------------------------------------------- start

  async function loadTexts() {
    try {
      const response = await fetch("texts.json");
      if (response.ok) {
        texts = await response.json();
        textsLoaded = true;
      }
    } catch (error) {
      console.error("texts.json:", error);
    }
  }

  // sw.js keeps the site for the next visit, with the server gone; browsers run it only
  // where the site is secure (HTTPS, or localhost): elsewhere the page works without it.
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("sw.js").catch(() => {});
  startWorker(); // at once: Python takes longest
  loadTexts().then(() => {
    applyTexts();
    route();
  });
})();
