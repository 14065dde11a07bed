// soay page: ask a question and watch each stage finish; the library; the live metrics.
// Plain browser JavaScript, no libraries, nothing fetched from outside this service.
"use strict";

const STAGES = ["retrieve", "plan", "code", "execute", "answer"];
const KEY_STORE = "soay.apiKey";
const HISTORY_STORE = "soay.history"; // the questions this browser asked, newest first, with their records
const HISTORY_MAX = 20;
const ALTERNATIVES_MAX = 3; // other readings of a question offered after "bad"
let keyVersion = 0; // bumped each time the person enters a key
const LIVE_EVERY_MS = 2000;
const QUESTION_ROUTES = new Set(["/v1/ask", "/v1/ask/stream", "/v1/chat/completions"]);
const RESULT_ROWS = 50; // rows of a result table shown; the rest is counted
const $ = (id) => document.getElementById(id);

const state = { config: null, turn: 0, record: null, question: "", entry: null, pending: null, library: null, liveTimer: null, live: null, rates: [] };

// --- small helpers -------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function show(node, message) {
  node.textContent = message;
  node.hidden = !message;
}

function headers(json = true) {
  const h = json ? { "Content-Type": "application/json" } : {};
  const key = localStorage.getItem(KEY_STORE);
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

// An HTTP failure as a sentence: the service's own message, with what it means to the person.
// Whether the key is stale is decided once the body is read: the person may enter a key meanwhile.
async function failure(response) {
  let message = "";
  try {
    const body = await response.json();
    message = body.error || (body.detail && JSON.stringify(body.detail)) || "";
  } catch (_) {
    message = (await response.text().catch(() => "")).slice(0, 300);
  }
  return describe(response.status, message, response.keyVersion !== keyVersion);
}

// `stale`: the request went out before the person entered the key now stored, so its 401 says
// nothing about that key and must not open the key panel again.
function describe(status, message, stale = false) {
  if (status === 401) {
    if (!stale) askForKey("The key was missing or wrong.");
    return `The service needs an API key (401): ${message}`;
  }
  if (status === 413) return `Too long (413): ${message}. Shorten the question.`;
  if (status === 503) return `The service is busy or a part of it is down (503): ${message}. Try again in a moment.`;
  if (status === 504) return `No answer in time (504): ${message}`;
  if (status >= 400 && status < 500) return `The question was not accepted (${status}): ${message}`;
  return `The service failed (${status}): ${message}`;
}

async function call(path, options = {}) {
  const sentWith = keyVersion;
  try {
    const response = await fetch(path, { ...options, headers: { ...headers(options.method === "POST"), ...(options.headers || {}) } });
    response.keyVersion = sentWith;
    return response;
  } catch (err) {
    throw new Error(`Cannot reach the service (${err.message}). Is \`soay serve\` running?`);
  }
}

// --- API key -------------------------------------------------------------------------------------

function askForKey(why) {
  $("key-panel").hidden = false;
  $("key-status").textContent = why || "";
  $("key-input").focus();
}

$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const key = $("key-input").value.trim();
  if (key) localStorage.setItem(KEY_STORE, key);
  else localStorage.removeItem(KEY_STORE);
  keyVersion += 1;
  $("key-panel").hidden = true;
  if (currentView() === "library") loadLibrary(true);
  if (state.pending && currentView() === "ask") { const q = state.pending; state.pending = null; ask(q); }
});

// --- views -------------------------------------------------------------------------------------------

function currentView() {
  return { "/library": "library", "/live": "live" }[location.pathname] || "ask";
}

function render(view) {
  for (const name of ["ask", "library", "live"]) $(`view-${name}`).hidden = name !== view;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === view);
  if (view === "library") loadLibrary(false);
  clearInterval(state.liveTimer);
  if (view === "live") {
    refreshLive();
    state.liveTimer = setInterval(refreshLive, LIVE_EVERY_MS);
  }
}

function go(path) {
  if (location.pathname !== path) history.pushState({}, "", path);
  render(currentView());
}

for (const a of document.querySelectorAll("nav a")) {
  a.addEventListener("click", (e) => { e.preventDefault(); go(a.getAttribute("href")); });
}
window.addEventListener("popstate", () => render(currentView()));

// --- ask -------------------------------------------------------------------------------------------------

function drawPath(container, apis, heads) {
  container.replaceChildren();
  apis.forEach((api, i) => {
    if (i) container.append(el("span", { class: "arrow" }, "→"));
    container.append(el("span", { class: `api${heads.has(api) || i === 0 ? " head" : ""}`, title: `hop ${i + 1}` }, api));
  });
}

function resetStages() {
  $("stages").replaceChildren(...STAGES.map((s) => el("li", { id: `stage-${s}` }, el("span", { class: "name" }, s), el("span", { class: "time" }))));
  $("stage-retrieve").classList.add("running");
}

function stageDone(event) {
  const item = $(`stage-${event.stage}`);
  item.classList.remove("running");
  item.classList.add("done");
  item.querySelector(".time").textContent = `${event.seconds.toFixed(3)} s`;
  const next = $(`stage-${STAGES[STAGES.indexOf(event.stage) + 1]}`);
  if (next) next.classList.add("running");
  $("outcome").hidden = false;
  if (event.stage === "retrieve") item.title = `${event.exemplars} exemplars`;
  if (event.stage === "plan") showSolution(event.solution);
  if (event.stage === "code") highlight($("code"), event.code);
  if (event.stage === "answer") $("answer").textContent = event.answer;
}

function stageFailed() {
  const running = document.querySelector(".stages li.running");
  if (running) {
    running.classList.replace("running", "failed");
    running.querySelector(".time").textContent = "failed";
  }
}

// Empty the answer view for a new answer (asked now, or shown again from the history).
function clearOutcome(question) {
  state.turn += 1; // a question still streaming stops updating the view
  $("ask-button").disabled = false;
  $("question").value = question;
  fitQuestion();
  state.question = question;
  state.record = null;
  state.entry = null;
  show($("ask-error"), "");
  $("outcome").hidden = true;
  delete $("outcome").dataset.requestId;
  for (const id of ["answer", "solution", "code", "result", "feedback-status", "request-id", "explanation", "candidates", "alternatives-list"]) $(id).replaceChildren();
  for (const id of ["exec-error", "explanation-panel", "candidates", "feedback", "alternatives", "from-history"]) $(id).hidden = true;
  $("confidence").textContent = "–";
  $("technical").open = false;
  for (const b of [$("good"), $("bad"), $("none-of-these")]) { b.disabled = false; b.classList.remove("chosen"); }
  setLink(question);
}

// The address of the view is a link that asks the question again (`/#q=…`).
function linkFor(question) {
  return `${location.origin}/#q=${encodeURIComponent(question)}`;
}

function setLink(question) {
  if (currentView() === "ask" && question.trim()) history.replaceState(history.state, "", `/#q=${encodeURIComponent(question)}`);
}

function linkedQuestion() {
  return (new URLSearchParams(location.hash.slice(1)).get("q") || "").trim();
}

async function ask(question) {
  clearOutcome(question);
  $("history-panel").open = false; // the answer comes right below the question
  const turn = state.turn;
  const button = $("ask-button");
  $("progress").hidden = false;
  resetStages();
  button.disabled = true;
  let started = false; // refused before any stage ran: no stage failed, the progress goes away
  try {
    const response = await call("/v1/ask/stream", { method: "POST", body: JSON.stringify({ query: question }) });
    if (turn !== state.turn) return; // another question (or a history item) took the view meanwhile
    if (!response.ok) throw new Error(await failure(response));
    started = true;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "", last = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (turn !== state.turn) { reader.cancel(); return; }
      buffered += decoder.decode(value || new Uint8Array(), { stream: !done });
      const lines = buffered.split("\n");
      buffered = lines.pop();
      for (const line of lines.filter((l) => l.trim())) handle((last = JSON.parse(line)));
      if (done) break;
    }
    if (!last || last.type === "stage") throw new Error("The answer stopped half-way (the connection closed). Try again.");
    if (last.type === "record") remember(question, last.record);
  } catch (err) {
    if (turn !== state.turn) return;
    if (started) stageFailed();
    else $("progress").hidden = true;
    show($("ask-error"), err.message);
  } finally {
    if (turn === state.turn) button.disabled = false;
  }
}

function handle(event) {
  if (event.type === "stage") stageDone(event);
  else if (event.type === "record") showRecord(event.record);
  else if (event.type === "error") {
    stageFailed();
    show($("ask-error"), describe(event.status, event.error));
  }
}

// An empty solution: the planner found the question outside what the service answers.
function showSolution(solution) {
  if (solution) drawPath($("solution"), solution.split(" -> "), new Set());
  else $("solution").replaceChildren(el("span", { class: "muted" }, "none: the question is outside what this service answers"));
}

function showRecord(record) {
  state.record = record;
  $("outcome").hidden = false;
  $("outcome").dataset.requestId = record.request_id; // for support, never shown in the page itself
  $("request-id").textContent = record.request_id;
  $("confidence").textContent = typeof record.confidence === "number" ? percent(record.confidence) : "–";
  $("feedback").hidden = false; // a verdict needs an answer to be about
  $("answer").textContent = record.answer;
  showSolution(record.solution);
  for (const item of document.querySelectorAll(".stages li:not(.done)")) { // stages the request did not need
    item.className = "skipped";
    item.querySelector(".time").textContent = "skipped";
  }
  if (record.code) highlight($("code"), record.code);
  else $("code").textContent = "# no program: nothing to run";
  // The answer already says in words what went wrong; the sandbox's category is for operators, and
  // only when the run failed: a name nobody carries (or several share) is an answer, not a failure.
  if (!record.ok && record.kind === "answer") {
    show($("exec-error"), `For operators: the program failed in the sandbox (${record.error_type || "error"}): ${record.error || "no detail"}`);
  }
  renderResult($("result"), record.result, record.kind !== "answer" ? "no result: see the answer above" : record.ok ? "no result" : "no result: the program failed");
  showExplanation(record.explanation || []);
  showCandidates(record.candidates || []);
}

// One row per API call of the run (consecutive calls of one API merged by the service).
function showExplanation(steps) {
  $("explanation-panel").hidden = !steps.length;
  $("explanation").replaceChildren(
    el("tr", {}, el("th", {}, "API"), el("th", {}, "asked with"), el("th", {}, "found"), el("th", {}, "the program took")),
    ...steps.map((s) => el("tr", {},
      el("td", { class: "mono api-name" }, s.api, s.calls > 1 ? ` ×${s.calls}` : ""),
      el("td", { class: "mono any", "data-label": "asked with" }, Object.entries(s.args || {}).map(([k, v]) => `${k}=${cell(v)}`).join(", ")),
      el("td", { class: "any", "data-label": "found" }, cell(s.found)), el("td", { class: "any", "data-label": "the program took" }, cell(s.took)))));
}

// Several people share the name: each namesake, and the question asked again about that one alone.
function showCandidates(candidates) {
  $("candidates").hidden = !candidates.length;
  $("candidates").replaceChildren(...candidates.map((c) => el("div", { class: "candidate" },
    el("span", { class: "who" }, [c.name, c.organization].filter(Boolean).join(" · ") || cell(c)),
    c.question ? el("button", { type: "button", class: "ask-link", onclick: () => ask(c.question) }, c.question) : "")));
}

function cell(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function renderResult(container, result, nothing) {
  container.replaceChildren();
  if (result === null || result === undefined) {
    container.append(el("span", { class: "muted" }, nothing));
  } else if (Array.isArray(result) && result.length && result.every((r) => r && typeof r === "object" && !Array.isArray(r))) {
    const columns = [...new Set(result.flatMap((r) => Object.keys(r)))];
    const rows = result.slice(0, RESULT_ROWS).map((r) => el("tr", {}, columns.map((c) => el("td", {}, cell(r[c])))));
    container.append(el("table", { class: "table" }, el("tr", {}, columns.map((c) => el("th", {}, c))), rows));
    if (result.length > RESULT_ROWS) container.append(el("div", { class: "muted more" }, `… and ${result.length - RESULT_ROWS} more rows`));
  } else if (Array.isArray(result)) {
    if (!result.length) container.append(el("span", { class: "muted" }, "an empty list"));
    else container.append(el("ol", {}, result.slice(0, RESULT_ROWS).map((v) => el("li", {}, cell(v)))));
  } else if (result && typeof result === "object") {
    container.append(el("table", { class: "table" }, Object.entries(result).map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, cell(v))))));
  } else {
    container.append(el("span", { class: "value" }, cell(result)));
  }
}

// Python syntax highlighting: keywords, strings, numbers, comments, calls (API calls stand out).
const PY_KEYWORDS = new Set("and as assert break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield".split(" "));
function highlight(pre, code) {
  const apis = new Set(state.config ? state.config.apis : []);
  const token = /(#[^\n]*)|("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|\b(\d+(?:\.\d+)?)\b|\b([A-Za-z_][A-Za-z0-9_]*)\b(\s*\()?/g;
  pre.replaceChildren();
  let last = 0;
  for (const m of code.matchAll(token)) {
    pre.append(code.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1]) pre.append(el("span", { class: "com" }, m[1]));
    else if (m[2]) pre.append(el("span", { class: "str" }, m[2]));
    else if (m[3]) pre.append(el("span", { class: "num" }, m[3]));
    else if (PY_KEYWORDS.has(m[4])) pre.append(el("span", { class: "kw" }, m[4]), m[5] || "");
    else if (m[5]) pre.append(el("span", { class: apis.has(m[4]) ? "api-call" : "fn" }, m[4]), m[5]);
    else pre.append(m[4]);
  }
  pre.append(code.slice(last));
}

// --- feedback, and the other readings of a question ------------------------------------------------

function percent(p) {
  return p < 0.005 ? "< 1 %" : `${Math.round(p * 100)} %`;
}

function alternativesOf(record) {
  return (record && Array.isArray(record.alternatives) ? record.alternatives : [])
    .filter((a) => a && a.combination !== undefined && a.text).slice(0, ALTERNATIVES_MAX);
}

// One verdict per answer: good; bad with the reading the person picked; or plain bad ("none of these",
// or no other reading to offer).
async function sendVerdict(verdict, choice = null) {
  const record = state.record;
  if (!record) return false;
  const status = $("feedback-status");
  status.textContent = "sending…";
  const body = { request_id: record.request_id, verdict };
  if (choice !== null) body.choice = choice;
  try {
    const response = await call("/v1/feedback", { method: "POST", body: JSON.stringify(body) });
    if (!response.ok) throw new Error(await failure(response));
  } catch (err) {
    status.textContent = err.message;
    return false;
  }
  status.textContent = `Thank you: recorded as ${verdict}${choice !== null ? ", with the reading you picked" : ""}.`;
  for (const b of [$("good"), $("bad"), $("none-of-these"), ...document.querySelectorAll(".alternative .pick")]) b.disabled = true;
  $(verdict).classList.add("chosen");
  rememberVerdict(record.request_id, verdict);
  return true;
}

async function feedback(verdict) {
  if (!state.record) return;
  if (verdict === "bad" && alternativesOf(state.record).length) offerAlternatives(state.record);
  else await sendVerdict(verdict);
}

// "Did you mean …?": each next-best reading of the question, asked with that reading.
function offerAlternatives(record) {
  const question = state.question || record.query;
  for (const b of [$("good"), $("bad")]) b.disabled = true;
  $("bad").classList.add("chosen");
  $("feedback-status").textContent = "Sorry. Was it one of these?";
  $("alternatives").hidden = false;
  $("none-of-these").disabled = false;
  $("alternatives-list").replaceChildren(...alternativesOf(record).map((alt) => {
    const answer = el("div", { class: "alt-answer muted" }, "answering…");
    const pick = el("button", { type: "button", class: "small good pick" }, "This one");
    const item = el("li", { class: "alternative", "data-combination": String(alt.combination) },
      el("div", { class: "reading" }, `Did you mean: ${alt.text}`),
      el("div", { class: "alt-meta muted" }, [alt.solution && alt.solution.replaceAll(" -> ", " → "), typeof alt.probability === "number" ? `${percent(alt.probability)} likely` : ""].filter(Boolean).join(" · ")),
      answer, pick);
    pick.addEventListener("click", async () => {
      if (await sendVerdict("bad", alt.combination)) item.classList.add("picked");
    });
    answerReading(question, alt.combination, answer);
    return item;
  }));
}

async function answerReading(question, reading, into) {
  try {
    const response = await call("/v1/ask", { method: "POST", body: JSON.stringify({ query: question, reading }) });
    if (!response.ok) throw new Error(await failure(response));
    const record = await response.json();
    into.textContent = record.answer;
    into.classList.remove("muted");
  } catch (err) {
    into.textContent = err.message;
    into.classList.add("failed");
  }
}

// --- copy ----------------------------------------------------------------------------------------------

async function copy(text, button) {
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch (_) { // no clipboard API off https/localhost: the old way
    const area = el("textarea", { style: "position:fixed;top:-100px;opacity:0", "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    try { copied = document.execCommand("copy"); } catch (_) { copied = false; }
    area.remove();
  }
  button.textContent = copied ? "Copied" : "Could not copy";
  button.classList.toggle("done", copied);
  clearTimeout(button.restore);
  button.restore = setTimeout(() => { button.textContent = button.dataset.label; button.classList.remove("done"); }, 2000);
}

$("copy-answer").addEventListener("click", (e) => copy($("answer").textContent, e.currentTarget));
$("copy-code").addEventListener("click", (e) => copy(state.record ? state.record.code : $("code").textContent, e.currentTarget));
$("copy-link").addEventListener("click", (e) => copy(linkFor(state.question), e.currentTarget));

// --- history (this browser's localStorage only) --------------------------------------------------------

function loadHistory() {
  try {
    const items = JSON.parse(localStorage.getItem(HISTORY_STORE) || "[]");
    return Array.isArray(items) ? items.filter((e) => e && e.question && e.record) : [];
  } catch (_) {
    return [];
  }
}

function saveHistory(items) {
  for (let n = items.length; n >= 0; n -= 1) { // a full storage keeps the newest that fit
    try {
      localStorage.setItem(HISTORY_STORE, JSON.stringify(items.slice(0, n)));
      return;
    } catch (_) { /* too big: one fewer */ }
  }
}

function remember(question, record) {
  const kept = { ...record, result: Array.isArray(record.result) ? record.result.slice(0, RESULT_ROWS) : record.result };
  state.entry = { question, at: Date.now(), record: kept };
  saveHistory([state.entry, ...loadHistory().filter((e) => e.question !== question)].slice(0, HISTORY_MAX));
  drawHistory();
}

function rememberVerdict(requestId, verdict) {
  const items = loadHistory();
  for (const e of items) if (e.record.request_id === requestId) e.verdict = verdict;
  saveHistory(items);
}

function drawHistory() {
  const items = loadHistory();
  $("history-panel").hidden = !items.length;
  $("history-count").textContent = items.length ? `· ${items.length}` : "";
  $("history-list").replaceChildren(...items.map((e) => el("li", {},
    el("button", { type: "button", class: "ask-link", title: "show this answer again", onclick: () => showStored(e.question) }, e.question),
    el("span", { class: "muted when" }, new Date(e.at).toLocaleString()))));
}

// A question of the history, shown as it was answered (no new request).
function showStored(question) {
  const entry = loadHistory().find((e) => e.question === question);
  if (!entry) return;
  if (currentView() !== "ask") go("/");
  clearOutcome(question);
  const timings = entry.record.timings || {};
  $("stages").replaceChildren(...STAGES.map((s) => el("li", { id: `stage-${s}`, class: s in timings ? "done" : "skipped" },
    el("span", { class: "name" }, s), el("span", { class: "time" }, s in timings ? `${Number(timings[s]).toFixed(3)} s` : "skipped"))));
  $("progress").hidden = false;
  showRecord(entry.record);
  state.entry = entry;
  $("from-history").hidden = false;
  $("from-history").replaceChildren(`From your history, asked ${new Date(entry.at).toLocaleString()}. `,
    el("button", { type: "button", class: "ask-link", onclick: () => ask(question) }, "Ask again"));
  if (entry.verdict) {
    for (const b of [$("good"), $("bad")]) b.disabled = true;
    $(entry.verdict).classList.add("chosen");
    $("feedback-status").textContent = `You said: ${entry.verdict}.`;
  }
  $("progress").scrollIntoView({ block: "start" });
}

$("history-clear").addEventListener("click", () => { localStorage.removeItem(HISTORY_STORE); drawHistory(); });

$("good").addEventListener("click", () => feedback("good"));
$("bad").addEventListener("click", () => feedback("bad"));
$("none-of-these").addEventListener("click", () => sendVerdict("bad"));
// The question box grows with its text (up to its CSS max-height).
function fitQuestion() {
  const box = $("question");
  box.style.height = "auto";
  box.style.height = `${box.scrollHeight + 2}px`;
}
$("question").addEventListener("input", fitQuestion);
window.addEventListener("resize", fitQuestion);
$("ask-form").addEventListener("submit", (e) => { e.preventDefault(); ask($("question").value); });
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ask($("question").value); }
});

function askFromElsewhere(question) {
  go("/");
  ask(question);
}

// --- library ------------------------------------------------------------------------------------------

async function loadLibrary(force) {
  if (state.library && !force) return;
  show($("library-error"), "");
  try {
    const response = await call("/v1/library");
    if (!response.ok) throw new Error(await failure(response));
    state.library = await response.json();
  } catch (err) {
    show($("library-error"), err.message);
    return;
  }
  $("library-domain").textContent = `· ${state.library.domain}: ${state.library.apis.length} APIs`;
  $("library-count").textContent = `· ${state.library.solutions.length} solutions`;
  drawGraph($("graph"), state.library);
  drawSolutions($("solutions"), state.library);
}

// Layered drawing: heads on the left, every other API in the column of its distance from a head.
function drawGraph(container, lib) {
  const W = 200, H = 34, COLW = 330, ROWH = 62, PAD = 30;
  const depth = {};
  const queue = lib.apis.filter((a) => a.head).map((a) => a.name);
  queue.forEach((n) => { depth[n] = 0; });
  while (queue.length) {
    const n = queue.shift();
    for (const e of lib.edges) if (e.src === n && depth[e.dst] === undefined) { depth[e.dst] = depth[n] + 1; queue.push(e.dst); }
  }
  const columns = [];
  for (const a of lib.apis) (columns[depth[a.name] ?? 0] ||= []).push(a);
  const rows = Math.max(...columns.map((c) => c.length));
  const pos = {};
  columns.forEach((col, c) => col.forEach((a, r) => {
    const offset = ((rows - col.length) * ROWH) / 2;
    pos[a.name] = { x: PAD + c * COLW, y: PAD + offset + r * ROWH };
  }));
  const width = PAD * 2 + (columns.length - 1) * COLW + W + 150, height = PAD * 2 + rows * ROWH;
  const colors = {};
  const palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];
  for (const e of lib.edges) colors[e.param] ||= palette[Object.keys(colors).length % palette.length];
  const root = svg("svg", { viewBox: `0 0 ${width} ${height + 30}`, role: "img", "aria-label": "API graph" });
  const defs = svg("defs");
  for (const [param, color] of Object.entries(colors)) {
    defs.append(svg("marker", { id: `arrow-${param}`, viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: color })));
  }
  root.append(defs);
  const pairs = {};
  for (const e of lib.edges) (pairs[`${e.src}\u0000${e.dst}`] ||= []).push(e);
  for (const group of Object.values(pairs)) {
    const { src, dst, param } = group[0];
    const a = pos[src], b = pos[dst];
    let d;
    if (src === dst) {
      d = `M${a.x + W - 30},${a.y} C${a.x + W + 10},${a.y - 40} ${a.x + W + 40},${a.y + 5} ${a.x + W},${a.y + H / 2 - 4}`;
    } else if (b.x > a.x) {
      d = `M${a.x + W},${a.y + H / 2} C${a.x + W + 90},${a.y + H / 2} ${b.x - 90},${b.y + H / 2} ${b.x},${b.y + H / 2}`;
    } else {  // same column: an arc on the right, wider the further apart; leaving high, arriving low
      const bulge = 30 + Math.abs(b.y - a.y) * 0.45;
      d = `M${a.x + W},${a.y + H * 0.3} C${a.x + W + bulge},${a.y + H * 0.3} ${b.x + W + bulge},${b.y + H * 0.75} ${b.x + W},${b.y + H * 0.75}`;
    }
    const title = group.map((e) => `${e.src} → ${e.dst}: ${e.attribute} → ${e.param}${e.relation ? ` (${e.relation})` : ""}`).join("\n");
    root.append(svg("path", { class: "edge", d, stroke: colors[param], "marker-end": `url(#arrow-${param})` }, svg("title", {}, title)));
  }
  for (const api of lib.apis) {
    const p = pos[api.name];
    root.append(svg("g", { class: `node${api.head ? " head" : ""}`, "data-api": api.name, transform: `translate(${p.x},${p.y})` },
      svg("title", {}, `${api.name}(${api.params.join(", ")}) → ${api.returns} of ${api.entity}\n${api.description}`),
      svg("rect", { width: W, height: H, rx: 7 }),
      svg("text", { x: W / 2, y: H / 2 + 4.5, "text-anchor": "middle" }, api.name)));
  }
  const legend = svg("g", { class: "legend", transform: `translate(${PAD},${height + 10})` });
  Object.entries(colors).forEach(([param, color], i) => {
    legend.append(svg("line", { x1: i * 170, y1: 0, x2: i * 170 + 26, y2: 0, stroke: color, "stroke-width": 3 }),
      svg("text", { x: i * 170 + 32, y: 4 }, `passes ${param}`));
  });
  legend.append(svg("rect", { x: Object.keys(colors).length * 170, y: -7, width: 26, height: 14, rx: 3, class: "head-key" }),
    svg("text", { x: Object.keys(colors).length * 170 + 32, y: 4 }, "head (a search: what a person types)"));
  root.append(legend);
  container.replaceChildren(root);
}

// One collapsed line per solution (its path, hops and kinds of question); opened, its combinations
// with an example question of each.
function drawSolutions(container, lib) {
  const heads = new Set(lib.apis.filter((a) => a.head).map((a) => a.name));
  container.replaceChildren(...lib.solutions.map((s) => {
    const path = el("span", { class: "path" });
    drawPath(path, s.apis, heads);
    const kinds = [...new Set(s.combinations.map((c) => c.kind))];
    const summary = el("summary", {}, path, el("span", { class: "about" },
      el("span", { class: "meta" }, `${s.hops}-hop · ${s.combinations.length} combination${s.combinations.length === 1 ? "" : "s"}`),
      el("span", { class: "kinds" }, kinds.map((k) => el("span", { class: "kind" }, k)))));
    const rows = s.combinations.map((c) => el("tr", {},
      el("td", {}, el("span", { class: "kind" }, c.kind), " ", c.inputs.join(", "), " → ", el("b", {}, c.output)),
      el("td", {}, Object.entries(c.examples).map(([lang, q]) => el("div", {},
        el("button", { type: "button", class: "ask-link", lang, title: "ask this", onclick: () => askFromElsewhere(q) }, q))))));
    return el("details", { class: "solution", "data-solution": s.solution }, summary, el("table", { class: "table combos" }, rows));
  }));
}

// --- live -------------------------------------------------------------------------------------------------

function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:\\.|[^"\\])*)"/g)) labels[l[1]] = l[2].replace(/\\(.)/g, "$1");
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

function total(samples, name, filter = () => true) {
  return samples.filter((s) => s.name === name && filter(s.labels)).reduce((sum, s) => sum + s.value, 0);
}

async function refreshLive() {
  let samples;
  try {
    const response = await fetch("/metrics");
    if (!response.ok) throw new Error(await failure(response));
    samples = parseMetrics(await response.text());
    show($("live-error"), "");
  } catch (err) {
    show($("live-error"), err.message.startsWith("Cannot") ? err.message : `Cannot read /metrics: ${err.message}`);
    return;
  }
  const now = performance.now() / 1000;
  const snapshot = { t: now, requests: total(samples, "soay_requests_total"), stages: {} };
  for (const stage of STAGES) {
    const only = (l) => l.stage === stage;
    snapshot.stages[stage] = { sum: total(samples, "soay_stage_latency_seconds_sum", only), count: total(samples, "soay_stage_latency_seconds_count", only) };
  }
  // every ingress replica answers the application's totals (serving/metrics.py): rates compare scrapes
  const before = state.live;
  state.live = snapshot;
  $("live-replicas").textContent = String(total(samples, "soay_ingress_replicas"));
  if (before) {
    const rate = Math.max(0, (snapshot.requests - before.requests) / (now - before.t));
    state.rates.push(rate);
    state.rates = state.rates.slice(-60);
    $("live-rps").textContent = rate.toFixed(2);
    const max = Math.max(...state.rates, 0.1);
    const x = (i) => 300 - ((state.rates.length - 1 - i) * 300) / 59; // the newest on the right
    $("live-spark").replaceChildren(svg("polyline", { points: state.rates.map((r, i) => `${x(i)},${58 - (r / max) * 54}`).join(" ") }));
  }
  $("live-inflight").textContent = String(total(samples, "soay_in_flight_requests"));
  // what the request counter holds, by route and status: questions, feedback, refusals
  const requests = samples.filter((s) => s.name === "soay_requests_total");
  const count = (keep) => requests.filter((s) => keep(s.labels)).reduce((sum, s) => sum + s.value, 0);
  const ok = (l) => Number(l.status) < 400;
  const asked = count((l) => QUESTION_ROUTES.has(l.endpoint) && ok(l));
  const verdicts = count((l) => l.endpoint === "/v1/feedback" && ok(l));
  const refused = count((l) => !ok(l));
  $("live-total").replaceChildren(
    el("dt", {}, String(asked)), el("dd", {}, "questions taken (ask, streamed ask, chat)"),
    el("dt", {}, String(verdicts)), el("dd", {}, "feedback verdicts"),
    el("dt", {}, String(refused)), el("dd", {}, "requests refused or failed (4xx, 5xx)"),
    el("dt", {}, String(snapshot.requests)), el("dd", {}, "requests in all"));
  const produced = total(samples, "soay_log_records_produced_total"), pending = total(samples, "soay_log_outbox_pending");
  const held = total(samples, "soay_log_outbox_records"), connections = total(samples, "soay_log_broker_connections");
  const full = total(samples, "soay_log_outbox_full") > 0 ? " (outbox full: questions are refused)" : "";
  $("live-log").textContent = `${produced} records sent, ${pending} waiting to be sent, ${held} kept in the outbox${full}; ${connections ? "broker connected" : "no broker connection"}`;

  const means = STAGES.map((stage) => {
    const s = snapshot.stages[stage], b = before && before.stages[stage];
    const recent = b && s.count > b.count ? (s.sum - b.sum) / (s.count - b.count) : null;
    return { stage, recent, overall: s.count ? s.sum / s.count : null, count: s.count };
  });
  const longest = Math.max(...means.map((m) => m.overall || 0), 0.001);
  $("live-stages").replaceChildren(
    el("tr", {}, el("th", {}, "stage"), el("th", {}, "last interval"), el("th", {}, "since start"), el("th", { title: "questions that reached this stage since start" }, "questions"), el("th", { class: "bar-cell", style: "width:35%" }, "")),
    ...means.map((m) => el("tr", {}, el("td", {}, m.stage), el("td", { class: "mono num" }, m.recent === null ? "–" : `${m.recent.toFixed(3)} s`),
      el("td", { class: "mono num" }, m.overall === null ? "–" : `${m.overall.toFixed(3)} s`), el("td", { class: "mono num" }, String(m.count)),
      el("td", { class: "bar-cell" }, el("div", { class: "bar", style: `width:${((m.overall || 0) / longest) * 100}%` })))));
  const models = samples.filter((s) => s.name === "soay_model_info");
  $("live-models").replaceChildren(el("tr", {}, el("th", {}, "model"), el("th", {}, "version (training run)")),
    ...models.map((s) => el("tr", {}, el("td", { class: "mono" }, s.labels.model),
      el("td", { title: s.labels.path }, el("span", { class: "mono" }, runName(s.labels.path)), s.labels.trained ? el("span", { class: "muted" }, ` · ${s.labels.trained}`) : ""))));
}

// A checkpoint's short name: its run directory (…/runs/<run>/model → <run>).
function runName(path) {
  const parts = String(path || "").split(/[\\/]+/).filter(Boolean);
  if (parts.length > 1 && parts[parts.length - 1] === "model") parts.pop();
  return parts.length ? parts[parts.length - 1] : "?";
}

// --- start ------------------------------------------------------------------------------------------------

async function start() {
  try {
    const response = await call("/page.json");
    if (!response.ok) throw new Error(await failure(response));
    state.config = await response.json();
  } catch (err) {
    show($("ask-error"), err.message);
    return;
  }
  if (state.config.api_key_required && !localStorage.getItem(KEY_STORE)) askForKey("");
  $("scope").textContent = state.config.scope.en || "";
  for (const e of state.config.examples) {
    $("examples").append(el("button", { type: "button", class: "example", lang: e.language, onclick: () => ask(e.question) }, e.question));
  }
  drawHistory();
  render(currentView());
  const linked = linkedQuestion();
  if (currentView() === "ask" && linked) askLinked(linked);
  else $("history-panel").open = true; // nothing asked yet: the person's earlier questions are the news
}

// A link (`/#q=…`) asks its question; when the page still needs the key, once it has it.
function askLinked(question) {
  if (state.config && state.config.api_key_required && !localStorage.getItem(KEY_STORE)) {
    $("question").value = question;
    state.pending = question;
  } else {
    ask(question);
  }
}

window.addEventListener("hashchange", () => {
  const linked = linkedQuestion();
  if (currentView() === "ask" && linked && linked !== state.question) askLinked(linked);
});

start();
