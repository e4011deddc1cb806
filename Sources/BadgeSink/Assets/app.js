// The sink's web view: every device as a phone, a timeline of pushes, live by server-sent events (/events),
// faults added and cleared through /faults. No build step: this file is served as it is.
"use strict";

const MAX_PUSHES = 5000;
const MAX_ROWS = 500;
const MAX_ALERTS = 20;

const view = {
  devices: new Map(),
  pushes: [],
  types: new Set(),
  lastSeq: 0,
  source: null,
  renderPending: false,
  faultsPending: false,
};
// What a test (or a curious developer) can read from the console.
window.sinkView = view;

const $ = (id) => document.getElementById(id);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function badgeText(badge) {
  return badge > 99 ? "99+" : String(badge);
}

function deviceOf(push) {
  let device = view.devices.get(push.token);
  if (!device) {
    device = {
      token: push.token, provider: push.provider, topic: null, environment: null, badge: null, badgeVersion: null,
      alerts: [], badgeChanges: [], badgeOnly: 0, pushes: 0, failed: 0, seqs: [],
    };
    view.devices.set(push.token, device);
  }
  return device;
}

// Folds one push into its device, as the sink's /devices does.
function apply(push) {
  if (push.seq <= view.lastSeq) return;
  view.lastSeq = push.seq;
  view.pushes.push(push);
  if (view.pushes.length > MAX_PUSHES) view.pushes.splice(0, view.pushes.length - MAX_PUSHES);
  if (push.type) view.types.add(push.type);
  const device = deviceOf(push);
  device.pushes += 1;
  device.seqs.push(push.seq);
  if (push.topic) device.topic = push.topic;
  if (push.environment) device.environment = push.environment;
  if (push.status !== 200) {
    device.failed += 1;
    return;
  }
  if (push.badge !== null) {
    if (push.kind !== "alert" && device.badge !== push.badge) {
      device.badgeChanges.push({ seq: push.seq, from: device.badge, to: push.badge });
    }
    device.badge = push.badge;
    device.badgeVersion = push.badge_version;
  }
  if (push.kind === "alert") {
    device.alerts.push(push);
  } else if (push.kind === "badge_only") {
    device.badgeOnly += 1;
  }
}

function filters() {
  return {
    token: $("filter-token").value.trim().toLowerCase(),
    type: $("filter-type").value,
    status: $("filter-status").value,
    text: $("filter-text").value.trim().toLowerCase(),
  };
}

function pushMatches(push, f) {
  if (f.token && !push.token.toLowerCase().includes(f.token)) return false;
  if (f.type && push.type !== f.type) return false;
  if (f.status === "ok" && push.status !== 200) return false;
  if (f.status === "error" && push.status === 200) return false;
  if (f.text) {
    const haystack = [push.token, push.type, push.title, push.body, push.thread, push.reason]
      .filter((part) => part)
      .join(" ")
      .toLowerCase();
    if (!haystack.includes(f.text)) return false;
  }
  return true;
}

function renderPhone(device) {
  const phone = element("article", "phone");
  phone.dataset.token = device.token;
  const meta = element("div", "phone-meta");
  meta.append(element("code", "token", device.token));
  const where = [device.provider, device.environment, device.topic].filter((part) => part).join(" · ");
  meta.append(element("span", "where", where));
  phone.append(meta);

  const screen = element("div", "screen");
  const home = element("div", "home");
  const icon = element("div", "app-icon");
  const badge = element("span", "badge", device.badge === null ? "" : badgeText(device.badge));
  badge.dataset.badge = device.badge === null ? "" : String(device.badge);
  badge.hidden = !device.badge;
  icon.append(badge);
  home.append(icon, element("span", "app-name", device.topic || "app"));
  screen.append(home);

  const lock = element("ol", "lock-screen");
  for (const alert of device.alerts.slice(-MAX_ALERTS).reverse()) {
    const item = element("li", "notification");
    item.dataset.seq = String(alert.seq);
    item.append(element("div", "title", alert.title || ""));
    item.append(element("div", "body", alert.body || ""));
    if (alert.thread) item.append(element("div", "thread", "thread " + alert.thread));
    lock.append(item);
  }
  screen.append(lock);
  const changes = element("ol", "badge-changes");
  for (const change of device.badgeChanges.slice(-5).reverse()) {
    const from = change.from === null ? "none" : change.from;
    const item = element("li", null, `badge ${from} → ${change.to} (seq ${change.seq})`);
    item.dataset.seq = String(change.seq);
    changes.append(item);
  }
  screen.append(changes);
  phone.append(screen);
  const stats = `alerts ${device.alerts.length} · badge-only ${device.badgeOnly} · pushes ${device.pushes}`
    + ` · failed ${device.failed}` + (device.badgeVersion === null ? "" : ` · v${device.badgeVersion}`);
  phone.append(element("div", "phone-stats", stats));
  return phone;
}

function renderRow(push) {
  const row = element("tr", push.status === 200 ? "accepted" : "refused");
  row.dataset.seq = String(push.seq);
  const fault = push.status === 0 ? "connection: " + push.reason : push.status === 200 ? "" : push.reason;
  const cells = [
    push.seq, push.received_at.slice(11, 23), push.token, push.provider + " " + push.http_version, push.kind,
    push.type || "", push.badge === null ? "" : push.badge, push.status, fault || "",
    push.delay_ms ? push.delay_ms + " ms" : "",
  ];
  for (const cell of cells) row.append(element("td", null, cell));
  return row;
}

function render() {
  view.renderPending = false;
  const f = filters();
  const typeSelect = $("filter-type");
  const known = new Set(Array.from(typeSelect.options, (option) => option.value));
  for (const type of Array.from(view.types).sort()) {
    if (!known.has(type)) typeSelect.append(new Option(type, type));
  }
  const matching = view.pushes.filter((push) => pushMatches(push, f));
  const shownTokens = new Set(matching.map((push) => push.token));
  const phones = [];
  for (const device of view.devices.values()) {
    const unfiltered = !f.type && !f.status && !f.text;
    const tokenMatches = !f.token || device.token.toLowerCase().includes(f.token);
    if (shownTokens.has(device.token) || (unfiltered && tokenMatches)) phones.push(renderPhone(device));
  }
  $("devices").replaceChildren(...phones);
  if (view.devices.size === 0) $("devices").append($("no-devices") || element("p", "empty", "No push yet."));
  $("timeline").replaceChildren(...matching.slice(-MAX_ROWS).reverse().map(renderRow));
  const refused = view.pushes.filter((push) => push.status !== 200).length;
  $("summary").textContent = `${view.devices.size} devices · ${view.pushes.length} pushes · ${refused} refused`;
}

function scheduleRender() {
  if (view.renderPending) return;
  view.renderPending = true;
  setTimeout(render, 50);
}

async function loadFaults() {
  view.faultsPending = false;
  const answer = await fetch("/faults");
  const list = (await answer.json()).faults;
  const items = list.map((fault) => {
    const parts = [fault.token ? "token " + fault.token : "every token"];
    if (fault.status !== null) parts.push(`${fault.status} ${fault.reason}`);
    if (fault.connection) parts.push("connection " + fault.connection);
    if (fault.delay_ms) parts.push(`delay ${fault.delay_ms} ms`);
    if (fault.times !== null) parts.push(`${fault.times} more`);
    if (fault.rate !== null) parts.push(`rate ${fault.rate}`);
    return element("li", "fault", parts.join(", "));
  });
  $("fault-list").replaceChildren(...items);
}

function scheduleFaults() {
  if (view.faultsPending) return;
  view.faultsPending = true;
  setTimeout(() => loadFaults().catch(showFaultError), 500);
}

function showFaultError(error) {
  const paragraph = $("fault-error");
  paragraph.textContent = String(error.message || error);
  paragraph.hidden = false;
}

async function addFault(event) {
  event.preventDefault();
  const form = event.target;
  const fault = {};
  for (const [name, value] of new FormData(form).entries()) {
    if (value === "") continue;
    fault[name] = ["status", "times", "delay_ms"].includes(name) ? parseInt(value, 10)
      : name === "rate" ? parseFloat(value) : value;
  }
  const answer = await fetch("/faults", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(fault),
  });
  if (!answer.ok) {
    const body = await answer.json();
    throw new Error(body.error ? body.error.message : "status " + answer.status);
  }
  $("fault-error").hidden = true;
  form.reset();
  await loadFaults();
}

function connect() {
  if (view.source) view.source.close();
  const source = new EventSource("/events?after=" + view.lastSeq);
  view.source = source;
  source.addEventListener("open", () => {
    $("connection").dataset.state = "live";
    $("connection").textContent = "live";
  });
  source.addEventListener("error", () => {
    $("connection").dataset.state = "reconnecting";
    $("connection").textContent = "reconnecting…";
  });
  source.addEventListener("push", (event) => {
    apply(JSON.parse(event.data));
    scheduleRender();
    scheduleFaults();
  });
}

async function clearDeliveries() {
  await fetch("/deliveries", { method: "DELETE" });
  view.devices.clear();
  view.pushes = [];
  render();
}

function start() {
  for (const id of ["filter-token", "filter-type", "filter-status", "filter-text"]) {
    $(id).addEventListener("input", scheduleRender);
  }
  $("fault-form").addEventListener("submit", (event) => addFault(event).catch(showFaultError));
  $("clear-faults").addEventListener("click", () => {
    fetch("/faults", { method: "DELETE" }).then(loadFaults).catch(showFaultError);
  });
  $("clear-deliveries").addEventListener("click", () => clearDeliveries().catch(showFaultError));
  // From the oldest push the sink replays, then live.
  view.lastSeq = 0;
  connect();
  loadFaults().catch(showFaultError);
  render();
}

start();
