// supervise console: live updates. Pages work without this file; with it, a page marked
// data-live follows /live (Server-Sent Events) and, when something changes, fetches itself
// again and swaps in the fresh #live part. Nothing from the server is run or parsed as
// script: the fresh page is parsed by DOMParser (which runs no script) and its already
// escaped #live element is imported as it is.
(function () {
  "use strict";
  var body = document.body;
  if (!body || !body.hasAttribute("data-live") || !window.EventSource) {
    return;
  }
  var timer = null;
  var updates = 0;

  function refresh() {
    timer = null;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (resp) { return resp.ok ? resp.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        var here = document.getElementById("live");
        if (fresh && here) {
          here.replaceWith(document.importNode(fresh, true));
          updates += 1;
          body.setAttribute("data-live-updates", String(updates));
        }
      })
      .catch(function () { /* the next change tries again */ });
  }

  function changed() {
    if (timer === null) {
      timer = window.setTimeout(refresh, 100);
    }
  }

  var source = null;

  function start() {
    source = new EventSource("/live");
    source.addEventListener("ready", function () { body.setAttribute("data-live-state", "open"); });
    source.onmessage = changed;
    source.onerror = function () {
      body.setAttribute("data-live-state", source.readyState === EventSource.CLOSED ? "closed" : "retrying");
    };
  }

  // A page left behind (or kept in the back/forward cache) lets its stream go, so it holds
  // none of the browser's few connections to the console; coming back opens a new one and
  // reloads what changed meanwhile.
  window.addEventListener("pagehide", function () {
    if (source !== null) { source.close(); source = null; }
    body.removeAttribute("data-live-state");
  });
  window.addEventListener("pageshow", function (e) {
    if (source === null) { start(); }
    if (e.persisted) { changed(); }
  });
  start();
})();
