// The demo's progressive page: one EventSource on the gateway's product route, one card per
// section drawn as its event arrives (in the order the sections end), the last event's summary at
// the bottom. Text from the gateway is only ever set as textContent, never parsed as HTML.
// Query parameters: gateway (the gateway's origin, default this page's), id (default 42).
"use strict";

(function () {
  const params = new URLSearchParams(window.location.search);
  const gateway = params.get("gateway") || window.location.origin;
  const id = params.get("id") || "42";
  const url = gateway.replace(/\/$/, "") + "/products/" + encodeURIComponent(id);
  const started = performance.now();
  const sections = document.getElementById("sections");
  const footer = document.getElementById("done");
  document.getElementById("product").textContent = id;
  document.getElementById("source").textContent = url;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className)
      node.className = className;
    if (text !== undefined)
      node.textContent = text;
    return node;
  }

  let order = 0;
  const source = new EventSource(url);
  source.addEventListener("section", function (event) {
    const line = JSON.parse(event.data);
    const card = element("section", "part");
    card.dataset.section = line.section;
    card.dataset.status = line.status;
    card.dataset.source = line.source;
    card.dataset.order = String(order++);
    const title = element("h2", "", line.section + " ");
    const at = Math.round(performance.now() - started);
    title.appendChild(element("span", "at", line.status + " (" + line.source + "), " + at + " ms"));
    card.appendChild(title);
    card.appendChild(element("pre", "", JSON.stringify(line.data, null, 1)));
    sections.appendChild(card);
    sections.dataset.state = "drawing";
  });
  source.addEventListener("done", function (event) {
    source.close(); // done: no reconnection
    const last = JSON.parse(event.data);
    sections.dataset.state = "done";
    footer.hidden = false;
    footer.dataset.degraded = String(last.degraded);
    footer.textContent = (last.degraded ? "Degraded: " + last.warnings.join(", ") : "Complete") +
      " after " + Math.round(performance.now() - started) + " ms (request " + last.request_id + ")";
  });
  source.onerror = function () {
    if (sections.dataset.state === "done")
      return;
    source.close(); // an error answer (a required section failed) or no gateway: say so, no retry
    sections.dataset.state = "failed";
    footer.hidden = false;
    footer.textContent = "No progressive answer from " + url + " (open it directly to see the error).";
  };
})();
