// The page's glue: forms go out as JSON (the API's own bodies), API errors are put into words,
// the comparison plots are drawn with Chart.js. The live mesh view is in mesh.js.
"use strict";

// --- htmx: send forms as JSON; empty fields are left out (the service's defaults apply) -------
htmx.defineExtension("json-enc", {
  onEvent(name, evt) {
    if (name === "htmx:configRequest") evt.detail.headers["Content-Type"] = "application/json";
  },
  encodeParameters(xhr, parameters, elt) {
    xhr.overrideMimeType("text/json");
    const body = {};
    // a field of checkboxes is a list, even with one value (the runs form's tasks); the same name
    // in a text box is one value (the streams form's task set)
    const form = elt && elt.closest ? elt.closest("form") : null;
    const many = (key) => !!form && form.querySelector(`input[type="checkbox"][name="${CSS.escape(key)}"]`) !== null;
    for (const [key, value] of parameters.entries()) {
      if (typeof value !== "string" || value.trim() === "") continue;
      if (many(key)) (body[key] = body[key] || []).push(value);
      else body[key] = value;
    }
    return JSON.stringify(body);
  },
});

// --- errors in words ---------------------------------------------------------------------------
const ADVICE = {
  401: "Your login is missing or expired: open the login URL that make up printed.",
  403: "The service refused this request.",
  404: "It no longer exists (or belongs to another session): reload the page.",
  409: "It cannot happen in the current state: wait for the run in flight to finish, then try again.",
  413: "The document is too long: shorten it below the size shown under the box.",
  422: "Something in the form is not valid: check the fields and try again.",
  429: "The service is busy: wait for the run queue to drain or the stream in flight to end, then try again.",
  503: "The service is stopping or restarting: wait a moment and reload.",
};

function describe(detail) {
  if (Array.isArray(detail)) {
    return detail.map((d) => `${(d.loc || []).filter((p) => p !== "body").join(".") || "request"}: ${d.msg}`).join("; ");
  }
  return typeof detail === "string" ? detail : JSON.stringify(detail);
}

function flash(message, advice) {
  const box = document.getElementById("flash");
  box.replaceChildren();
  const what = document.createElement("p");
  what.textContent = message;
  const todo = document.createElement("p");
  todo.textContent = advice || "";
  const close = document.createElement("button");
  close.type = "button";
  close.textContent = "Dismiss";
  close.addEventListener("click", () => { box.hidden = true; });
  box.append(what, todo, close);
  box.hidden = false;
}
window.gaiaFlash = flash;

document.addEventListener("htmx:responseError", (evt) => {
  const xhr = evt.detail.xhr;
  let detail = xhr.statusText || `HTTP ${xhr.status}`;
  try { detail = describe(JSON.parse(xhr.responseText).detail); } catch (_) { /* not JSON */ }
  flash(`What went wrong: ${detail}`, ADVICE[xhr.status] || "Try again; if it keeps failing, look at the service's log (make logs).");
});
document.addEventListener("htmx:sendError", () => {
  flash("The service did not answer.", "Is it running? Start it with make up, then reload this page.");
});
document.addEventListener("htmx:afterRequest", (evt) => {
  if (evt.detail.successful && evt.detail.requestConfig && evt.detail.requestConfig.verb !== "get") {
    document.getElementById("flash").hidden = true;
  }
});

// --- small form helpers ------------------------------------------------------------------------
document.addEventListener("click", (evt) => {
  const name = evt.target.dataset && evt.target.dataset.checkAll;
  if (!name) return;
  const boxes = evt.target.closest("form").querySelectorAll(`input[name="${name}"]`);
  const all = Array.from(boxes).every((b) => b.checked);
  boxes.forEach((b) => { b.checked = !all; });
});

document.addEventListener("input", (evt) => {
  const max = evt.target.dataset && Number(evt.target.dataset.maxBytes);
  if (!max) return;
  const size = new TextEncoder().encode(evt.target.value).length;
  const hint = evt.target.closest("form").querySelector(`[data-size-for="${evt.target.name}"]`);
  hint.textContent = size > max
    ? `The document is ${size} bytes: at most ${max} are accepted. Shorten it.`
    : (size ? `${size} of ${max} bytes` : "");
  hint.classList.toggle("error", size > max);
});

// --- the conversation tells the mesh view which run to follow --------------------------------
document.addEventListener("htmx:afterSettle", (evt) => {
  const body = document.getElementById("conv-body");
  const mesh = document.getElementById("mesh");
  if (body && mesh && body.dataset.latestRun && body.dataset.latestRun !== mesh.dataset.run && window.gaiaMesh) {
    window.gaiaMesh.follow(mesh, body.dataset.latestRun);
  }
  const runs = document.getElementById("runs-body");
  if (runs && runs.dataset.finished !== drawnFor) drawCharts(runs.dataset.finished);
});

// --- comparison plots --------------------------------------------------------------------------
let drawnFor = null;
const charts = {};

async function drawCharts(finished) {
  if (!document.getElementById("chart-bytes") || typeof Chart === "undefined") return;
  drawnFor = finished;
  const response = await fetch("/ui/compare", { credentials: "same-origin" });
  if (!response.ok) return;
  const data = await response.json();
  const note = document.getElementById("compare-note");
  note.textContent = data.labels.length
    ? `${data.runs.reduce((a, b) => a + b, 0)} runs in ${data.labels.length} groups (${data.labels.map((l, i) => `${l}: ${data.runs[i]}`).join(", ")})`
    : "No finished run yet: start some runs with different protocols to compare them.";
  const series = { "chart-bytes": data.bytes, "chart-header": data.header_share, "chart-seconds": data.seconds, "chart-quality": data.quality };
  for (const [id, values] of Object.entries(series)) {
    if (charts[id]) charts[id].destroy();
    charts[id] = new Chart(document.getElementById(id), {
      type: "bar",
      data: { labels: data.labels, datasets: [{ data: values, backgroundColor: "#3b6ea5" }] },
      options: { animation: false, plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true } } },
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const runs = document.getElementById("runs-body");
  if (runs) drawCharts(runs.dataset.finished);
});

// --- a refreshed fragment keeps where its reader had scrolled -----------------------------------
// The runs table is swapped every 2 s; its wide-table scroll box went back to the left each time,
// so the columns past the box's edge could not be reached.
const scrolled = new WeakMap();
document.addEventListener("htmx:beforeSwap", (evt) => {
  const boxes = evt.detail.target.querySelectorAll(".scroll");
  scrolled.set(evt.detail.target, Array.from(boxes, (b) => [b.scrollLeft, b.scrollTop]));
});
document.addEventListener("htmx:afterSwap", (evt) => {
  const was = scrolled.get(evt.detail.target) || [];
  evt.detail.target.querySelectorAll(".scroll").forEach((b, i) => {
    if (was[i]) [b.scrollLeft, b.scrollTop] = was[i];
  });
});
