// The live mesh view: the relay at the centre, the run's agents around it, every frame drawn
// as it travels from its source through the relay to its destinations. It reads the run's
// event stream (/api/runs/{id}/events, the same the API serves; the login cookie goes along).
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  // The drawing is as wide as its box, one unit a CSS pixel: text keeps its CSS size on a phone
  // (a fixed 640-unit drawing shrank 11px labels to 6px at 390px) and circles fit their labels.
  const NARROW = 560;         // below this width, a ring that leaves room for the stats under each node
  const MIN_R = 30;           // an agent's circle, unless its label needs more
  const HOP_MS = 380;          // one hop (agent -> relay, relay -> agent) on screen
  const MAX_FLYING = 48;       // frames in flight on screen at once; more are counted, not drawn
  const MAX_ROWS = 400;        // rows kept in the frame list
  const COLORS = { doc_init: "#6a4c93", question: "#1982c4", chunk: "#8ac926", facts: "#ff924c",
    triples: "#ffca3a", answer: "#2a9d8f", subtask: "#5f0f40", result: "#0f4c5c" };

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function html(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  class MeshView {
    constructor(root, runId) {
      this.root = root;
      this.runId = runId;
      this.detail = root.dataset.detail === "1";
      this.agents = new Map();   // node id -> {tool, state, g, stats}
      this.flying = 0;
      this.skipped = 0;
      this.ended = false;
      this.build();
      this.connect();
    }

    build() {
      this.root.replaceChildren();
      delete this.root.dataset.state;  // the run followed before may have ended; this one has not
      const head = html("p", "", "mesh-status");
      head.innerHTML = 'Run <a></a> · <strong class="run-state">connecting…</strong> · <span class="frame-count">0</span> frames';
      head.querySelector("a").textContent = this.runId.slice(0, 8);
      head.querySelector("a").href = `/runs/${this.runId}`;
      this.status = head.querySelector(".run-state");
      this.count = head.querySelector(".frame-count");
      this.svg = el("svg", { role: "img", "aria-label": "agents around the relay, frames moving between them", class: "mesh-svg" });
      this.links = el("g", {}, this.svg);
      this.nodes = el("g", {}, this.svg);
      this.dots = el("g", {}, this.svg);
      this.relay = el("g", { class: "relay", "data-node": "network" }, this.nodes);
      el("circle", { cx: 0, cy: 0, r: 34 }, this.relay);
      el("text", { x: 0, y: 5, "text-anchor": "middle" }, this.relay).textContent = "relay";
      const answer = html("p", "", "mesh-answer");
      answer.hidden = true;
      this.answer = answer;
      const cols = html("div", "", "mesh-cols");
      const frames = html("div", "", "mesh-frames");
      frames.append(html("h3", "Frames"));
      const scroll = html("div", "", "scroll");
      const table = html("table", "", "frames");
      table.innerHTML = "<thead><tr><th>#</th><th>t (s)</th><th>from → to</th><th>type</th><th>bytes</th><th>status</th></tr></thead>";
      this.rows = html("tbody");
      table.append(this.rows);
      scroll.append(table);
      frames.append(scroll);
      const notes = html("div", "", "mesh-notes");
      notes.append(html("h3", "Events"));
      this.notes = html("ol", "", "notes");
      notes.append(this.notes);
      cols.append(frames, notes);
      this.root.append(head, this.svg, answer, cols);
      this.geometry();
      this.resized = new ResizeObserver(() => { if (Math.round(this.root.clientWidth) !== this.W) this.geometry(); });
      this.resized.observe(this.root);
    }

    // The drawing's size and ring from its box's width (again when the box changes width).
    geometry() {
      this.W = Math.max(300, Math.round(this.root.clientWidth || 640));
      this.H = this.W < NARROW ? 400 : 420;
      this.CX = this.W / 2;
      this.CY = this.H / 2;
      this.RX = Math.min(this.W / 2 - 90, 240);  // room beside a side node for its stats line
      this.RY = this.H / 2 - 80;                 // and above the top one, below the bottom one
      this.svg.setAttribute("viewBox", `0 0 ${this.W} ${this.H}`);
      this.relay.setAttribute("transform", `translate(${this.CX},${this.CY})`);
      this.layout();
    }

    connect() {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      this.ws = new WebSocket(`${scheme}://${location.host}/api/runs/${this.runId}/events`);
      this.ws.onmessage = (msg) => this.event(JSON.parse(msg.data));
      this.ws.onclose = (evt) => {
        if (!this.ended && evt.code !== 1000) {
          this.note(evt.code === 1013 ? "the view fell behind; reload to replay the run" : "the event stream closed (not logged in, or the service stopped)", "error");
        }
      };
    }

    close() {
      this.ended = true;
      if (this.ws) this.ws.close();
      if (this.resized) this.resized.disconnect();
    }

    // --- agents ------------------------------------------------------------------------------
    layout() {
      const ids = Array.from(this.agents.keys());
      ids.forEach((id, i) => {
        const a = this.agents.get(id);
        const angle = -Math.PI / 2 + (2 * Math.PI * i) / ids.length;
        a.x = this.CX + this.RX * Math.cos(angle);
        a.y = this.CY + this.RY * Math.sin(angle);
        a.g.setAttribute("transform", `translate(${a.x},${a.y})`);
        a.link.setAttribute("x1", this.CX);
        a.link.setAttribute("y1", this.CY);
        a.link.setAttribute("x2", a.x);
        a.link.setAttribute("y2", a.y);
      });
    }

    agent(id, tool) {
      let a = this.agents.get(id);
      if (a) {
        if (tool && a.tool !== tool) { a.tool = tool; a.label.textContent = tool; this.fit(a); }
        return a;
      }
      const link = el("line", { x1: this.CX, y1: this.CY, x2: this.CX, y2: this.CY, class: "link" }, this.links);
      const g = el("g", { class: "agent state-connected", "data-node": id, tabindex: "0" }, this.nodes);
      const circle = el("circle", { r: MIN_R }, g);
      const label = el("text", { y: -2, "text-anchor": "middle", class: "tool" }, g);
      label.textContent = tool || "?";
      const node = el("text", { y: 12, "text-anchor": "middle", class: "node" }, g);
      node.textContent = `node ${id}`;
      const stats = el("text", { y: MIN_R + 16, "text-anchor": "middle", class: "stats" }, g);
      const title = el("title", {}, g);
      a = { tool: tool || "?", state: "connected", g, link, circle, label, node, stats, title, sent: 0, received: 0, bytes: 0, tokens: 0 };
      this.agents.set(id, a);
      this.layout();
      this.fit(a);
      this.paint(id);
      return a;
    }

    // The circle grows until both lines of its label lie inside it ("orchestrator" spilled out).
    fit(a) {
      let far = 0;
      for (const t of [a.label, a.node]) {
        let b;
        try { b = t.getBBox(); } catch (_) { continue; }  // not laid out (a hidden page): the smallest circle
        for (const x of [b.x, b.x + b.width]) for (const y of [b.y, b.y + b.height]) far = Math.max(far, Math.hypot(x, y));
      }
      const r = Math.max(MIN_R, Math.ceil(far + 3));
      a.circle.setAttribute("r", r);
      a.stats.setAttribute("y", r + 16);
    }

    paint(id) {
      const a = this.agents.get(id);
      a.stats.textContent = `↑${a.sent} ↓${a.received} · ${a.bytes} B · ${a.tokens} tok`;
      a.title.textContent = `${a.tool} (node ${id}): ${a.state}; ${a.sent} frames sent, ${a.received} received, ${a.bytes} bytes, ${a.tokens} tokens`;
      a.g.setAttribute("class", `agent state-${a.state}`);
      a.g.dataset.state = a.state;
      a.g.dataset.sent = a.sent;
      a.g.dataset.received = a.received;
    }

    team(agents) {
      for (const s of agents) {
        const a = this.agent(s.node_id, s.tool);
        a.state = s.state;  // the relay's own note says when and why an agent left
        this.paint(s.node_id);
      }
    }

    // --- frames ------------------------------------------------------------------------------
    point(id) {
      if (id === "network") return { x: this.CX, y: this.CY };
      const a = this.agent(id);
      return { x: a.x, y: a.y };
    }

    frame(f) {
      this.frames = (this.frames || 0) + 1;
      this.count.textContent = String(this.frames);
      if (f.src !== "network") {
        const a = this.agent(f.src);
        // a redelivery or a copy network faults lost repeats a frame already counted
        if (f.status !== "redelivered" && f.status !== "dropped_fault") { a.sent += 1; a.bytes += f.bytes; a.tokens += f.token_used ?? 0; }
        this.paint(f.src);
      }
      for (const d of f.status === "dropped_fault" ? [] : f.dst) {  // a lost copy reached nobody
        const a = this.agent(d);
        a.received += 1;
        a.bytes += f.bytes;
        this.paint(d);
      }
      this.row(f);
      if (f.status === "rejected") this.note(`rejected a frame from ${f.src}: ${f.error}`, "error");
      if (f.status === "redelivered") this.note(`redelivered ${f.type} to ${f.dst.join(", ")}`, "warn");
      if (f.status === "dropped_fault") this.note(`lost ${f.type} on the way to ${f.dst.join(", ")} (network faults)`, "warn");
      this.fly(f);
    }

    row(f) {
      const tr = html("tr");
      tr.dataset.type = f.type || "";
      tr.dataset.status = f.status;
      tr.dataset.src = f.src;
      tr.className = `status-${f.status}`;
      const cells = [this.frames, (f.t_ms / 1000).toFixed(2),
        `${f.src} → ${f.dst.join(", ") || "—"}`, f.type || "?", f.bytes, f.status + (f.error ? `: ${f.error}` : "")];
      for (const c of cells) tr.append(html("td", String(c)));
      // the newest frame comes into view, unless the reader has scrolled up to earlier ones
      const scroll = this.rows.closest(".scroll");
      const following = scroll.scrollTop + scroll.clientHeight >= scroll.scrollHeight - 8;
      this.rows.append(tr);
      while (this.rows.children.length > MAX_ROWS) this.rows.firstChild.remove();
      if (following) scroll.scrollTop = scroll.scrollHeight;
    }

    fly(f) {
      if (this.flying >= MAX_FLYING || document.hidden) { this.skipped += 1; return; }
      const color = f.status === "rejected" ? "#d62828" : f.status === "redelivered" ? "#f77f00" : (COLORS[f.type] || "#555");
      const legs = [];
      const from = this.point(f.src);
      const relay = { x: this.CX, y: this.CY };
      if (f.src !== "network") legs.push([from, relay]);
      if (f.status !== "rejected") for (const d of f.dst) legs.push([relay, this.point(d)]);
      if (!legs.length) return;
      const g = el("g", { class: "dot", "data-type": f.type || "" }, this.dots);
      el("circle", { r: 6 + Math.min(6, Math.log10(1 + f.bytes)), fill: color }, g);
      el("text", { x: 10, y: -8, class: "dot-label" }, g).textContent = `${f.type || "?"} ${f.bytes} B`;
      this.flying += 1;
      const start = performance.now();
      const firstLeg = f.src !== "network" ? 1 : 0;
      const total = (firstLeg + (legs.length > firstLeg ? 1 : 0)) * HOP_MS;
      const step = (now) => {
        const t = now - start;
        if (t >= total) {
          if (f.status === "rejected") { this.mark(relay.x, relay.y, "✕", "#d62828"); }
          g.remove();
          this.flying -= 1;
          return;
        }
        // the first hop goes to the relay; then the frame fans out to every destination at once
        const hop = firstLeg && t < HOP_MS ? 0 : 1;
        const k = (t - (hop && firstLeg ? HOP_MS : 0)) / HOP_MS;
        const pair = hop === 0 ? legs[0] : legs[firstLeg];
        const x = pair[0].x + (pair[1].x - pair[0].x) * k, y = pair[0].y + (pair[1].y - pair[0].y) * k;
        g.setAttribute("transform", `translate(${x},${y})`);
        if (hop === 1 && legs.length - firstLeg > 1 && !g.dataset.fanned) {
          g.dataset.fanned = "1";
          for (const extra of legs.slice(firstLeg + 1)) this.ghost(extra, color, HOP_MS - (t - firstLeg * HOP_MS));
        }
        requestAnimationFrame(step);
      };
      requestAnimationFrame(step);
    }

    ghost(leg, color, ms) {
      const c = el("circle", { r: 6, fill: color, opacity: "0.8" }, this.dots);
      const start = performance.now();
      const step = (now) => {
        const k = Math.min(1, (now - start) / Math.max(1, ms));
        c.setAttribute("cx", leg[0].x + (leg[1].x - leg[0].x) * k);
        c.setAttribute("cy", leg[0].y + (leg[1].y - leg[0].y) * k);
        if (k < 1) requestAnimationFrame(step); else c.remove();
      };
      requestAnimationFrame(step);
    }

    mark(x, y, glyph, color) {
      const t = el("text", { x: x + 28, y: y - 26, fill: color, class: "mark" }, this.dots);
      t.textContent = glyph;
      setTimeout(() => t.remove(), 1500);
    }

    note(text, cls) {
      const li = html("li", text, cls);
      this.notes.append(li);
      while (this.notes.children.length > 200) this.notes.firstChild.remove();
    }

    // --- the stream --------------------------------------------------------------------------
    event(e) {
      if (e.kind === "team") this.team(e.agents);
      else if (e.kind === "frame") this.frame(e);
      else if (e.kind === "note") {
        const text = e.text.replace(/^\[\s*[\d.]+s\]\s*/, "");
        this.note(text, /disconnected|failed|rejected|timed out/.test(text) ? "error" : /redelivered/.test(text) ? "warn" : "");
      }
      else if (e.kind === "state") {
        // a run that finished without an answer (timeout, agent_dead, ...) says how it ended
        const failed = e.state === "finished" && this.outcome && this.outcome !== "ok";
        this.status.textContent = (failed ? this.outcome : e.state) + (e.error ? ` (${e.error})` : "");
        this.status.classList.toggle("error", Boolean(failed));
        this.root.dataset.state = e.state;
        if (["finished", "cancelled", "interrupted"].includes(e.state)) {
          this.ended = true;
          // the journal followed its newest line while the run was live; ended, it reads from its first
          if (this.planView) this.planView.list.scrollTop = 0;
        }
      } else if (e.kind === "metrics") this.metrics(e.metrics);
      else if (e.kind === "journal") this.journal(e.node_id, e.entry);
    }

    // --- the orchestrated strategy: its plan, steps changing state, revisions, the journal ---
    journal(node, entry) {
      if (!this.planView) this.planView = new PlanView(this.root);
      this.planView.entry(node, entry);
    }

    metrics(m) {
      this.outcome = m.status;
      this.answer.hidden = false;
      this.answer.replaceChildren();
      if (m.status === "ok") {
        this.answer.append("Answer: ", html("strong", m.prediction, "final-answer"));
        if (m.quality_score !== null && m.quality_score !== undefined) {
          this.answer.append(` · right answer ${m.answer} · quality ${m.quality_score.toFixed(3)} · exact ${m.exact_match}`);
        } else {
          this.answer.append(" · not scored (no right answer given)");
        }
      } else {
        this.answer.append(html("span", `The run ended ${m.status}: ${m.error || ""}`, "error"));
      }
      this.answer.append(` · ${m.pkt_cnt} packets · ${m.bytes_tx + m.bytes_rx} bytes · ${m.token_sum} tokens · ${(m.elapsed_ms / 1000).toFixed(1)} s`);
      const holder = document.getElementById("metrics");
      if (holder && holder.dataset.run === this.runId) metricsTable(holder, m, this.runId);
    }
  }

  const REF = /@\{outputs\.([A-Za-z][A-Za-z0-9_]*)\.(result_data|processed_result_data)\}/g;
  const BOX_W = 150, BOX_H = 46, COL = 190, ROW = 64;

  class PlanView {
    constructor(root) {
      const cols = html("div", "", "plan-cols");
      const plan = html("div", "", "plan");
      plan.append(html("h3", "Plan"));
      this.attempts = html("div", "", "attempts");
      plan.append(this.attempts);
      const journal = html("div", "", "journal");
      journal.append(html("h3", "Journal"));
      this.list = html("ol", "", "notes journal-list");
      journal.append(this.list);
      cols.append(plan, journal);
      root.insertBefore(cols, root.querySelector(".mesh-answer"));
      this.steps = new Map();
    }

    entry(node, e) {
      const fields = Object.entries(e).filter(([k]) => !["t", "event", "plan"].includes(k))
        .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
      const li = html("li", `${e.event}${fields ? ": " + fields.slice(0, 240) : ""}`,
        /failed|rejected|unreadable|max_revisions/.test(e.event) ? "error" : /replan/.test(e.event) ? "warn" : "");
      li.dataset.event = e.event;
      this.list.append(li);
      this.list.scrollTop = this.list.scrollHeight;
      if (e.event === "attempt_started" && e.plan) this.draw(e.attempt, e.source, e.plan);
      else if (e.event === "step_started") this.state(e.step, "running");
      else if (e.event === "step_completed") this.state(e.step, "completed", e.result);
      else if (e.event === "step_failed") this.state(e.step, "failed", e.error);
    }

    draw(attempt, source, plan) {
      for (const old of this.attempts.querySelectorAll(".attempt")) old.classList.add("superseded");
      const block = html("div", "", "attempt");
      block.dataset.attempt = attempt;
      block.append(html("p", `Attempt ${attempt}${attempt > 1 ? " (revision " + (attempt - 1) + ")" : ""} · plan from ${source}`, "small"));
      const stages = plan.stages || [];
      const rows = Math.max(1, ...stages.map((st) => st.steps.length));
      const w = 20 + stages.length * COL, h = 20 + rows * ROW;
      const svg = el("svg", { viewBox: `0 0 ${w} ${h}`, class: "plan-svg", role: "img", "aria-label": `plan of attempt ${attempt}` });
      svg.style.maxWidth = `${w}px`;
      const defs = el("defs", {}, svg);
      const marker = el("marker", { id: `arrow-${attempt}`, viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b7785" }, marker);
      const lines = el("g", {}, svg);
      const boxes = el("g", {}, svg);
      const where = new Map();
      this.steps = new Map();
      stages.forEach((stage, i) => {
        el("text", { x: 10 + i * COL, y: 12, class: "stage-label" }, boxes).textContent = `stage ${i + 1}`;
        stage.steps.forEach((step, j) => {
          const x = 10 + i * COL, y = 20 + j * ROW;
          where.set(step.stepId, { x, y });
          const g = el("g", { class: "step state-pending", "data-step": step.stepId, "data-state": "pending", tabindex: "0" }, boxes);
          el("rect", { x, y, width: BOX_W, height: BOX_H, rx: 6, class: step.isFinalAnswer ? "final" : "" }, g);
          el("text", { x: x + 8, y: y + 18, class: "step-id" }, g).textContent = step.stepId + (step.isFinalAnswer ? " ★" : "");
          el("text", { x: x + 8, y: y + 35, class: "step-tool" }, g).textContent = `${step.assigned_agent_role} · ${step.tool_name}`;
          const title = el("title", {}, g);
          title.textContent = `${step.stepId}: ${step.tool_name} ${JSON.stringify(step.sub_task_input)}`;
          this.steps.set(step.stepId, { g, title, base: title.textContent });
        });
      });
      for (const stage of stages) {
        for (const step of stage.steps) {
          const to = where.get(step.stepId);
          const seen = new Set();
          for (const m of JSON.stringify(step.sub_task_input).matchAll(REF)) {
            const from = where.get(m[1]);
            if (!from || seen.has(m[1])) continue;
            seen.add(m[1]);
            el("path", {
              d: `M${from.x + BOX_W},${from.y + BOX_H / 2} C${from.x + BOX_W + 25},${from.y + BOX_H / 2} ${to.x - 25},${to.y + BOX_H / 2} ${to.x},${to.y + BOX_H / 2}`,
              class: "ref", "data-from": m[1], "data-to": step.stepId, "marker-end": `url(#arrow-${attempt})`,
            }, lines);
          }
        }
      }
      block.append(svg);
      this.attempts.append(block);
    }

    state(stepId, state, detail) {
      const s = this.steps.get(stepId);
      if (!s) return;
      s.g.setAttribute("class", `step state-${state}`);
      s.g.dataset.state = state;
      if (detail !== undefined && detail !== null) s.title.textContent = `${s.base}\n→ ${typeof detail === "string" ? detail : JSON.stringify(detail)}`;
    }
  }

  // A value of metrics.json as text: a list joined with commas, a mapping as "key: value" pairs;
  // nested ones in brackets and parentheses (a list inside a list of values).
  function shownValue(v, nested = false) {
    if (v === null || v === undefined) return "–";
    if (Array.isArray(v)) {
      const s = v.map((x) => shownValue(x, true)).join(", ");
      return nested ? `[${s}]` : s;
    }
    if (typeof v === "object") {
      const s = Object.entries(v).map(([k, x]) => `${k}: ${shownValue(x, true)}`).join(", ");
      return nested ? `(${s})` : s;
    }
    return String(v);
  }

  // One row of the metrics table. A mapping (layers, made_by, scoring, a stream's figures) is a
  // table of its own in the cell, one row a key, and a list of mappings (membership) one such
  // table per item: on one line, the native wire's layers ran far past a phone's screen. A row of
  // metrics.json names its key in data-key, a row of a nested table in data-field.
  function metricRow(k, v, nested = false) {
    const tr = html("tr");
    tr.dataset[nested ? "field" : "key"] = k;
    const td = html("td");
    if (isMapping(v) && Object.keys(v).length) td.append(nestedTable(v));
    else if (Array.isArray(v) && v.length && v.every(isMapping)) {
      const list = html("ol", "", "nested");
      for (const item of v) { const li = html("li"); li.append(nestedTable(item)); list.append(li); }
      td.append(list);
    } else td.textContent = shownValue(v);
    tr.classList.toggle("nested", td.firstElementChild !== null);
    tr.append(html("th", k), td);
    return tr;
  }

  function isMapping(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }

  function nestedTable(obj) {
    const table = html("table", "", "nested");
    const body = html("tbody");
    for (const [k, v] of Object.entries(obj)) body.append(metricRow(k, v, true));
    table.append(body);
    return table;
  }

  function metricsTable(holder, m, runId) {
    holder.replaceChildren();
    const table = html("table", "", "metrics");
    table.id = "metrics-table";
    const body = html("tbody");
    for (const [k, v] of Object.entries(m)) {
      if (k !== "agents") body.append(metricRow(k, v));
    }
    table.append(body);
    const agents = html("table", "", "metrics");
    agents.id = "agents-table";
    const cols = ["node_id", "tool", "status", "pkts_sent", "bytes_sent", "pkts_received", "bytes_received", "rejected", "token_used", "llm_ms"];
    const head = html("tr");
    for (const c of cols) head.append(html("th", c));
    agents.append(html("thead"));
    agents.tHead.append(head);
    const ab = html("tbody");
    for (const a of Object.values(m.agents || {})) {
      const tr = html("tr");
      for (const c of cols) tr.append(html("td", String(a[c])));
      ab.append(tr);
    }
    agents.append(ab);
    const wrap1 = html("div", "", "scroll"); wrap1.append(table);
    const wrap2 = html("div", "", "scroll"); wrap2.append(agents);
    holder.append(wrap1, html("h3", "Per agent"), wrap2);
    const link = document.getElementById("archive");
    if (link) link.hidden = false;
  }

  const views = new WeakMap();

  function follow(root, runId) {
    const old = views.get(root);
    if (old) old.close();
    root.dataset.run = runId;
    if (runId) views.set(root, new MeshView(root, runId));
  }

  window.gaiaMesh = { follow };
  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll(".mesh[data-run]").forEach((root) => { if (root.dataset.run) follow(root, root.dataset.run); });
  });
})();
