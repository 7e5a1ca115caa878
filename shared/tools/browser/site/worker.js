// The Web Worker that runs Python: it loads Pyodide, unpacks what site.json names, imports
// shared.tools.browser.tab, then answers the page's calls one at a time.
//
// Messages it posts:
//   {progress: KEY, ...}   while loading (KEY: "python", "files", "unpack", "import");
//                          the page turns KEY into a sentence of its own language
//   {ready: true}          once tab is imported
//   {ready: false, error}  if loading failed
//   {id, ok: true, value}  / {id, ok: false, error}   the answer to {id, call, args}
"use strict";

importScripts("pyodide/pyodide.js");

// The only functions of tab the page may call, and how many arguments each takes.
const CALLS = { exercises: 1, open: 3, check: 3, hint: 3, export: 2 };

let tab = null;
let failure = null;

function progress(key, fields) {
  self.postMessage(Object.assign({ progress: key }, fields || {}));
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  }
  return new Uint8Array(await response.arrayBuffer());
}

async function start() {
  progress("python");
  const pyodide = await loadPyodide({ indexURL: "pyodide/" });

  const siteResponse = await fetch("site.json", { cache: "no-cache" });
  if (!siteResponse.ok) {
    throw new Error(`site.json: HTTP ${siteResponse.status} ${siteResponse.statusText}`);
  }
  const site = await siteResponse.json();
  const wheels = site.wheels || [];
  const archives = site.archives || [];
  const sitePackages = pyodide.runPython(
    "import sysconfig; sysconfig.get_paths()['purelib']"
  );

  // Fetch everything at once (the browser limits how many run together), unpack in order.
  const total = wheels.length + archives.length;
  let done = 0;
  progress("files", { done, total });
  const counted = (url) =>
    fetchBytes(url).then((bytes) => {
      done += 1;
      progress("files", { done, total });
      return bytes;
    });
  const wheelBytes = wheels.map(counted);
  const archiveBytes = archives.map((archive) => counted(archive.url));

  for (let i = 0; i < wheels.length; i++) {
    const bytes = await wheelBytes[i];
    progress("unpack", { detail: wheels[i].split("/").pop() });
    pyodide.unpackArchive(bytes, "zip", { extractDir: sitePackages });
  }
  for (let i = 0; i < archives.length; i++) {
    const bytes = await archiveBytes[i];
    progress("unpack", { detail: archives[i].url.split("/").pop() });
    pyodide.FS.mkdirTree(archives[i].to);
    pyodide.unpackArchive(bytes, "zip", { extractDir: archives[i].to });
  }

  progress("import");
  pyodide.runPython(
    "import sys; sys.path[:0] = ['/repo']; sys.path.append('/standins'); " +
      "from shared.tools.browser import tab"
  );
  tab = pyodide.pyimport("shared.tools.browser.tab");
}

const started = start().then(
  () => self.postMessage({ ready: true }),
  (error) => {
    failure = String(error);
    self.postMessage({ ready: false, error: failure });
  }
);

function answer(id, call, args) {
  if (failure !== null) {
    throw new Error(failure);
  }
  if (!Object.prototype.hasOwnProperty.call(CALLS, call)) {
    throw new Error(`no such call: ${call}`);
  }
  const list = Array.isArray(args) ? args : [];
  if (list.length !== CALLS[call]) {
    throw new Error(`${call} takes ${CALLS[call]} arguments, not ${list.length}`);
  }
  const fn = tab[call];
  let result;
  try {
    result = fn(...list);
  } finally {
    if (fn && typeof fn.destroy === "function") fn.destroy();
  }
  if (call === "export") {
    // A Python bytes object: copy it out as a Uint8Array and hand its buffer over.
    const bytes = result.toJs();
    result.destroy();
    self.postMessage({ id, ok: true, value: bytes }, [bytes.buffer]);
    return;
  }
  if (result && typeof result.destroy === "function") {
    // Not a str (the JSON calls return str, which arrives as a JS string): say so.
    const text = String(result);
    result.destroy();
    throw new Error(`${call} returned ${text}, not a JSON string`);
  }
  self.postMessage({ id, ok: true, value: result });
}

self.onmessage = async (event) => {
  const { id, call, args } = event.data || {};
  // Calls that come while Python loads wait for it, in the order they came.
  await started;
  try {
    answer(id, call, args);
  } catch (error) {
    // A fatal error leaves this Python unusable (most often a stack overflow: the browser
    // gives WebAssembly a smaller stack than a terminal's Python has): the page starts a
    // fresh one and says why.
    const fatal = Boolean(error && error.pyodide_fatal_error);
    self.postMessage({ id, ok: false, fatal, error: String(error) });
  }
};
