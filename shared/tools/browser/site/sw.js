// The service worker: the site keeps working with the server gone, after one visit.
//
// On its first visit the browser keeps every file of the site (site.json lists them) in a
// cache of its own.  Afterwards each request goes to the server first, so that a site the
// teacher rebuilt is seen at once, except Pyodide's files and the wheels, which are pinned
// and never change: those come from the cache, so forty laptops do not fetch 15 MB again
// at every reload.  Without the server, everything comes from the cache.
//
// Browsers start a service worker only in a secure context: a site served over HTTPS, or
// from localhost.  Over plain HTTP on a class network there is none, and the page works as
// before: the server must be there when the tab opens, a check needs nothing from it.

"use strict";

const CACHE = "crawler500-browser-site";
const PAGES = ["./", "index.html", "app.js", "app.css", "worker.js", "texts.json", "site.json"];

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const site = await (await fetch("site.json", { cache: "no-store" })).json();
      const files = [...PAGES, ...site.pyodide_files, ...site.wheels];
      files.push(...site.archives.map((archive) => archive.url));
      const cache = await caches.open(CACHE);
      await cache.addAll(files);
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

/** Pinned files, the same for as long as the site's Pyodide and wheels are. */
function pinned(url) {
  const path = new URL(url).pathname;
  return path.includes("/pyodide/") || path.includes("/wheels/");
}

self.addEventListener("fetch", (event) => {
  if (event.request.method !== "GET") return;
  event.respondWith(
    (async () => {
      const cache = await caches.open(CACHE);
      const kept = await cache.match(event.request, { ignoreSearch: true });
      if (kept && pinned(event.request.url)) return kept;
      try {
        const fresh = await fetch(event.request);
        if (fresh.ok) await cache.put(event.request, fresh.clone());
        return fresh;
      } catch (error) {
        if (kept) return kept;
        throw error;
      }
    })(),
  );
});
