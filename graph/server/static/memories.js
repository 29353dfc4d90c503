// The memory page: sign in, show one user's memories, edit them, undo changes, and follow the agent's changes.
// Talks only to this server's /memories/api/ endpoints; builds every element with textContent, never HTML.
"use strict";

const API = "memories/api/";
const POLL_MS = 4000;
const HISTORY_STEP = 50;
const OPEN = ["not started", "in progress"];
const STATUSES = ["not started", "in progress", "done", "archived"];
const ACTIONS = { created: "added", updated: "changed", deleted: "deleted" };
const UNDONE = { created: "restored (undo)", updated: "changed back (undo)", deleted: "removed again (undo)" };
const FIELD_NAMES = {
  task: "task", status: "status", deadline: "deadline", time_to_complete: "time to complete",
  solutions: "solutions", name: "name", location: "location", job: "job", connections: "connections",
  interests: "interests", memory: "text",
};
const SAVED = { token: "maistro.memories.token", user: "maistro.memories.user" };

const state = {
  auth: null,
  defaultUser: "",
  token: sessionStorage.getItem(SAVED.token) || "",
  user: sessionStorage.getItem(SAVED.user) || "",
  view: null,
  etag: null,
  results: null,
  editing: null,
  profileBase: null,
  profileDirty: false,
  instructionsBase: null,
  instructionsDirty: false,
  historyShown: HISTORY_STEP,
  timer: null,
  offline: false,
};

const $ = (id) => document.getElementById(id);

// --- small helpers -------------------------------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function quoted(text) {
  return `“${text}”`;
}

function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function shorten(text, length = 80) {
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

function showNotice(text) {
  $("problem").textContent = "";
  $("notice").textContent = text;
}

function showProblem(text) {
  $("problem").textContent = text;
}

function isOpen(todo) {
  return OPEN.includes(todo.value.status);
}

// What a ToDo is called in buttons and notices: its task, or its key when the stored document has no usable task.
function todoName(todo) {
  return typeof todo.value.task === "string" && todo.value.task ? todo.value.task : `the ToDo stored as ${todo.key}`;
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function lines(text) {
  return text.split("\n").map((line) => line.trim()).filter(Boolean);
}

// --- dates and durations -------------------------------------------------------------------------------------

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

function parseDate(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? null : date;
}

function showDate(iso) {
  const date = parseDate(iso);
  return date ? dateFormat.format(date) : String(iso);
}

function pad(number) {
  return String(number).padStart(2, "0");
}

function localInput(iso) {
  const date = iso ? parseDate(iso) : null;
  if (!date) return "";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

function isoFromInput(value) {
  if (!value) return null;
  const date = new Date(value);
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const zone = `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${value.length === 16 ? `${value}:00` : value}${zone}`;
}

function showMinutes(minutes) {
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
}

// --- talking to the server -----------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body, headers = {}) {
  const url = new URL(API + path, document.baseURI);
  if (!state.auth) url.searchParams.set("user_id", state.user);
  const init = { method, cache: "no-store", headers: { Accept: "application/json", ...headers } };
  if (state.token) init.headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch {
    throw new ApiError(0, "The server cannot be reached; is it still running?");
  }
  if (response.status === 304) return { status: 304 };
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.detail) || `The server answered HTTP ${response.status}.`);
  }
  return { status: response.status, data, etag: response.headers.get("ETag") };
}

// Run one change; on success show `done(result)` and reload, on a conflict reload, and always re-enable the button.
async function change(button, request, done) {
  if (button) button.disabled = true;
  try {
    const { data } = await request();
    let text = data.saved ? done(data) : "Nothing changed.";
    if (data.secrets && data.secrets.length) text += ` Left out as secret: ${data.secrets.join(", ")}.`;
    showNotice(text);
    return true;
  } catch (error) {
    if (error.status === 409) Object.assign(state, { editing: null, profileDirty: false, instructionsDirty: false });
    if (!handleLoss(error)) showProblem(error.message);
    return false;
  } finally {
    if (button) button.disabled = false;
    await load(true).catch(() => {});
  }
}

// A token that stopped working sends the user back to the sign-in form; returns whether that happened.
function handleLoss(error) {
  if (error.status !== 401 || !state.auth) return false;
  signOut(`You are signed out: ${error.message}`);
  return true;
}

// --- loading and following changes ---------------------------------------------------------------------------

async function load(force = false) {
  const headers = !force && state.etag ? { "If-None-Match": state.etag } : {};
  const result = await api("GET", `memories?history=${state.historyShown}`, undefined, headers);
  if (result.status === 304) return;
  state.etag = result.etag;
  state.view = result.data;
  if (state.results) await search(false);
  render();
}

async function poll() {
  if (document.hidden || !state.view) return;
  try {
    await load();
    if (state.offline) showProblem("");
    state.offline = false;
  } catch (error) {
    if (handleLoss(error)) return;
    state.offline = true;
    showProblem(error.message);
  }
}

// Re-rendering replaces elements: put keyboard focus back on the element that had it.
function keepingFocus(draw) {
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.focus : null;
  draw();
  if (focused) {
    const again = document.querySelector(`[data-focus="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

function render() {
  keepingFocus(() => {
    if (state.editing === null) renderTodos();
    if (!state.profileDirty) fillProfile();
    if (!state.instructionsDirty) fillInstructions();
    renderOtherKinds();
    renderHistory();
  });
}

// --- ToDos ---------------------------------------------------------------------------------------------------

function visibleTodos() {
  const source = state.results ? state.results.todos : state.view.todos;
  const filter = $("status-filter").value;
  if (filter === "all") return source;
  if (filter === "open") return source.filter(isOpen);
  return source.filter((todo) => todo.value.status === filter);
}

function renderTodos() {
  state.editing = null;
  const todos = state.view.todos;
  const open = todos.filter(isOpen).length;
  $("todo-count").textContent = `(${open} open, ${todos.length} in all)`;
  const shown = visibleTodos();
  $("todo-list").replaceChildren(...shown.map(todoCard));
  const empty = $("todo-empty");
  empty.hidden = shown.length > 0;
  empty.textContent = todos.length
    ? "No ToDo matches this status or search."
    : "No ToDos yet. Tell the agent about something you need to do, and it appears here.";
}

// A stored ToDo that does not fit its schema: shown as it is, with what is wrong, and only deleting it offered.
function invalidCard(todo, index) {
  const id = `todo-${index}`;
  const name = todoName(todo);
  return el("li", { class: "todo invalid", "data-key": todo.key, "aria-labelledby": id },
    el("h3", { id, text: `Not a valid ToDo: ${shorten(name, 60)}` }),
    el("p", { class: "problem-text", text: `This stored document does not fit the ToDo schema (${todo.problem}), so it cannot be edited here. Delete it, or fix it where it came from.` }),
    el("pre", { class: "raw", text: JSON.stringify(todo.value, null, 2) }),
    el("div", { class: "buttons" },
      el("button", { type: "button", class: "danger", "data-focus": `${todo.key}:delete`, "aria-label": `Delete: ${name}`, text: "Delete", onclick: (event) => removeTodo(todo, event.currentTarget) }),
    ),
  );
}

function todoCard(todo, index) {
  if (todo.problem) return invalidCard(todo, index);
  const value = todo.value;
  const closed = !isOpen(todo);
  const id = `todo-${index}`;
  const deadline = value.deadline ? parseDate(value.deadline) : null;
  const late = deadline && !closed && deadline.getTime() < Date.now();
  const details = el("dl", {},
    el("dt", { text: "Deadline" }),
    el("dd", {}, value.deadline ? showDate(value.deadline) : "none", late ? el("span", { class: "late", text: " · overdue" }) : null),
    el("dt", { text: "Time to complete" }),
    el("dd", { text: value.time_to_complete ? showMinutes(value.time_to_complete) : "not estimated" }),
  );
  const solutions = (value.solutions || []).length
    ? el("ul", { "aria-label": "Solutions" }, value.solutions.map((solution) => el("li", { text: solution })))
    : null;
  const task = value.task;
  const toggle = closed
    ? el("button", { type: "button", class: "quiet", "data-focus": `${todo.key}:toggle`, "aria-label": `Reopen: ${task}`, text: "Reopen", onclick: (event) => setStatus(todo, "not started", event.currentTarget) })
    : el("button", { type: "button", "data-focus": `${todo.key}:toggle`, "aria-label": `Mark done: ${task}`, text: "Mark done", onclick: (event) => setStatus(todo, "done", event.currentTarget) });
  const card = el("li", { class: closed ? "todo closed" : "todo", "data-key": todo.key, "aria-labelledby": id },
    el("h3", { id, text: task }),
    el("span", { class: "status", text: value.status }),
    details,
    solutions,
    el("div", { class: "buttons" },
      toggle,
      el("button", { type: "button", class: "quiet", "data-focus": `${todo.key}:edit`, "aria-label": `Edit: ${task}`, text: "Edit", onclick: () => openEditor(todo, card) }),
      el("button", { type: "button", class: "danger", "data-focus": `${todo.key}:delete`, "aria-label": `Delete: ${task}`, text: "Delete", onclick: (event) => removeTodo(todo, event.currentTarget) }),
    ),
  );
  return card;
}

function setStatus(todo, status, button) {
  const verb = status === "done" ? "Marked done" : "Reopened";
  return change(button, () => api("PATCH", `todos/${encodeURIComponent(todo.key)}`, { value: { status }, base: todo.value }),
    () => `${verb}: ${quoted(todo.value.task)}.`);
}

async function removeTodo(todo, button) {
  const removed = await change(button, () => api("DELETE", `todos/${encodeURIComponent(todo.key)}`),
    () => `Deleted ${quoted(todoName(todo))}. To bring it back, undo the change in the history below.`);
  if (removed) $("todos-title").focus();
}

function field(id, label, control) {
  control.id = id;
  return el("div", { class: "field" }, el("label", { for: id, text: label }), control);
}

function openEditor(todo, card) {
  if (state.editing !== null) closeEditor(false);
  state.editing = todo.key;
  const value = todo.value;
  const task = el("input", { type: "text", required: true, value: value.task });
  const status = el("select", {}, STATUSES.map((name) => el("option", { value: name, text: name, selected: name === value.status })));
  const deadline = el("input", { type: "datetime-local", value: localInput(value.deadline) });
  const minutes = el("input", { type: "number", min: 1, step: 1, inputmode: "numeric", value: value.time_to_complete ?? "" });
  const solutions = el("textarea", { rows: 3 });
  solutions.value = (value.solutions || []).join("\n");
  const form = el("form", { "aria-label": `Edit ${value.task}` },
    field("edit-task", "Task", task),
    field("edit-status", "Status", status),
    field("edit-deadline", "Deadline (your time zone; empty for none)", deadline),
    field("edit-minutes", "Time to complete (minutes)", minutes),
    field("edit-solutions", "Solutions (one per line)", solutions),
    el("div", { class: "buttons" },
      el("button", { type: "submit", text: "Save" }),
      el("button", { type: "button", class: "quiet", text: "Cancel", onclick: () => closeEditor(true) }),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const edited = {
      task: task.value.trim(),
      status: status.value,
      deadline: deadline.value === localInput(value.deadline) ? value.deadline ?? null : isoFromInput(deadline.value),
      time_to_complete: minutes.value === "" ? null : Number(minutes.value),
      solutions: lines(solutions.value),
    };
    const fields = Object.fromEntries(Object.entries(edited).filter(([name, next]) => !same(next, value[name] ?? null)));
    if (!Object.keys(fields).length) {
      closeEditor(true);
      showNotice("Nothing changed.");
      return;
    }
    const saved = await change(form.querySelector("button[type=submit]"),
      () => api("PATCH", `todos/${encodeURIComponent(todo.key)}`, { value: fields, base: value }),
      () => `Saved ${quoted(edited.task)}.`);
    if (saved) closeEditor(true);
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeEditor(true);
  });
  card.replaceChildren(form);
  task.focus();
}

function closeEditor(refocus) {
  const key = state.editing;
  renderTodos();
  if (refocus && key !== null) {
    const button = document.querySelector(`[data-focus="${CSS.escape(`${key}:edit`)}"]`);
    if (button) button.focus();
  }
}

async function search(announce = true) {
  const query = $("search").value.trim();
  $("clear-search").hidden = !query;
  if (!query) {
    state.results = null;
    $("search-note").textContent = "";
    return;
  }
  const { data } = await api("GET", `todos?query=${encodeURIComponent(query)}&limit=20`);
  state.results = data;
  const how = data.semantic
    ? `ToDos closest in meaning to ${quoted(query)}, best first.`
    : `ToDos whose task, solutions or status contain ${quoted(query)}.`;
  $("search-note").textContent = how;
  if (announce) showNotice(`${data.todos.length} found. ${how}`);
}

// --- profile and instructions --------------------------------------------------------------------------------

const PROFILE_TEXT = ["name", "location", "job"];
const PROFILE_LISTS = ["connections", "interests"];

// A stored profile or instructions that does not fit its schema: say so; saving the form replaces it.
function showStoredProblem(id, what, problem) {
  $(id).hidden = !problem;
  $(id).textContent = problem ? `What is stored as your ${what} does not fit its schema (${problem}); saving this form replaces it.` : "";
}

function fillProfile() {
  const profile = state.view.profile || {};
  state.profileBase = state.view.profile;
  showStoredProblem("profile-problem", "profile", state.view.profile_problem);
  for (const name of PROFILE_TEXT) $(`profile-${name}`).value = typeof profile[name] === "string" ? profile[name] : "";
  for (const name of PROFILE_LISTS) $(`profile-${name}`).value = Array.isArray(profile[name]) ? profile[name].join("\n") : "";
}

function fillInstructions() {
  const memory = state.view.instructions ? state.view.instructions.memory : "";
  state.instructionsBase = state.view.instructions;
  showStoredProblem("instructions-problem", "instructions", state.view.instructions_problem);
  $("instructions-text").value = typeof memory === "string" ? memory : "";
}

async function saveProfile(event) {
  event.preventDefault();
  const value = { ...(state.profileBase || {}) };
  for (const name of PROFILE_TEXT) value[name] = $(`profile-${name}`).value.trim() || null;
  for (const name of PROFILE_LISTS) value[name] = lines($(`profile-${name}`).value);
  if (await change(event.submitter, () => api("PUT", "profile", { value, base: state.profileBase }), () => "Saved your profile.")) {
    state.profileDirty = false;
    fillProfile();
  }
}

async function saveInstructions(event) {
  event.preventDefault();
  const value = { memory: $("instructions-text").value.trim() };
  if (await change(event.submitter, () => api("PUT", "instructions", { value, base: state.instructionsBase }), () => "Saved your instructions.")) {
    state.instructionsDirty = false;
    fillInstructions();
  }
}

// --- any other memory kind (MAISTRO_MEMORY_KINDS): shown from its JSON schema ------------------------------

function kindNamed(name) {
  return state.view.kinds.find((kind) => kind.name === name);
}

function documentFields(kind, value) {
  return el("dl", { class: "document" }, Object.entries(kind.schema.properties || {}).flatMap(([name, property]) => [
    el("dt", { text: property.title || name }),
    el("dd", { text: showValue(name, value[name]) }),
  ]));
}

function documentCard(kind, entry) {
  const problem = entry.problem ? `This ${kind.label} does not fit its schema (${entry.problem}).` : null;
  return el("li", { class: "card" },
    kind.text ? el("p", { text: entry.value.memory || "" }) : documentFields(kind, entry.value),
    problem ? el("p", { class: "stored-problem", text: problem }) : null,
  );
}

function kindPanel(kind) {
  const entries = state.view.documents[kind.name];
  return el("section", { id: `kind-${kind.name}`, class: "panel", "aria-labelledby": `kind-${kind.name}-title` },
    el("h2", { id: `kind-${kind.name}-title`, text: capitalized(kind.title) },
      kind.collection ? el("span", { class: "count", text: ` (${entries.length})` }) : null),
    el("p", { class: "hint", text: capitalized(kind.description) }),
    entries.length ? el("ul", { class: "cards" }, entries.map((entry) => documentCard(kind, entry)))
      : el("p", { class: "empty", text: `No ${kind.title} yet.` }),
  );
}

function renderOtherKinds() {
  $("other-kinds").replaceChildren(...state.view.kinds.filter((kind) => kind.name in state.view.documents).map(kindPanel));
}

// --- history -------------------------------------------------------------------------------------------------

function showValue(name, value) {
  if (value === null || value === undefined || value === "") return "none";
  if (Array.isArray(value)) return value.length ? shorten(value.join(", "), 60) : "none";
  if (name === "deadline") return showDate(value);
  if (name === "time_to_complete") return showMinutes(value);
  return shorten(value, 60);
}

function subject(entry) {
  const kind = kindNamed(entry.kind);
  if (!kind) return entry.kind;
  if (!kind.collection) return capitalized(kind.title);
  const stored = entry.after || entry.before || {};
  return `${capitalized(kind.label)} ${quoted(shorten(stored[kind.summary_field] || entry.key, 60))}`;
}

function fieldChanges(entry) {
  if (entry.action !== "updated") return [];
  const before = entry.before || {};
  const after = entry.after || {};
  return Object.keys({ ...before, ...after })
    .filter((name) => !same(before[name] ?? null, after[name] ?? null))
    .map((name) => `${FIELD_NAMES[name] || name}: ${showValue(name, before[name])} → ${showValue(name, after[name])}`);
}

function historyItem(entry) {
  const title = `${subject(entry)} ${(entry.undoes ? UNDONE : ACTIONS)[entry.action] || entry.action}`;
  const changes = fieldChanges(entry);
  // The user's own words when a chat made the change; the page's or CLI's note otherwise (an undo needs none).
  const said = entry.thread_id ? quoted(shorten(entry.message, 200)) : entry.undoes ? "" : entry.message;
  return el("li", {},
    el("div", {},
      el("p", { class: "when" }, el("time", { datetime: entry.time, text: showDate(entry.time) })),
      el("p", { class: "what", text: title }),
      changes.length ? el("p", { class: "fields", text: changes.join("; ") }) : null,
      said ? el("p", { class: "message", text: said }) : null,
    ),
    el("button", {
      type: "button", class: "quiet", "data-focus": `undo:${entry.id}`, "aria-label": `Undo: ${title}`, text: "Undo",
      onclick: (event) => change(event.currentTarget, () => api("POST", `history/${encodeURIComponent(entry.id)}/undo`), () => `Undone: ${title}.`),
    }),
  );
}

function renderHistory() {
  const { history, history_total: total } = state.view;
  $("history-count").textContent = `(${total})`;
  $("history-list").replaceChildren(...history.map(historyItem));
  $("history-empty").hidden = history.length > 0;
  $("more-history").hidden = history.length >= total;
}

// --- signing in and out --------------------------------------------------------------------------------------

function showSignIn() {
  stopPolling();
  $("memories").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  $("token-form").hidden = !state.auth;
  $("user-form").hidden = state.auth;
  if (state.auth) {
    $("token").value = "";
    $("token").focus();
  } else {
    $("user-id").value = state.user || state.defaultUser;
    $("user-id").focus();
  }
}

function signOut(reason) {
  sessionStorage.removeItem(SAVED.token);
  sessionStorage.removeItem(SAVED.user);
  Object.assign(state, { token: "", user: "", view: null, etag: null, results: null, editing: null });
  $("search").value = "";
  $("notice").textContent = "";
  showSignIn();
  if (reason) showProblem(reason);
}

async function enter() {
  try {
    await load(true);
  } catch (error) {
    if (state.auth && error.status === 401) {
      signOut(`That token was not accepted: ${error.message}`);
    } else {
      showSignIn();
      showProblem(error.message);
    }
    return;
  }
  $("sign-in").hidden = true;
  $("memories").hidden = false;
  $("who").hidden = false;
  $("who-text").textContent = state.auth ? `Signed in as ${state.view.user_id}` : `Showing ${state.view.user_id} (open server)`;
  $("sign-out").textContent = state.auth ? "Sign out" : "Switch user";
  showProblem("");
  $("main").focus();
  startPolling();
}

function startPolling() {
  stopPolling();
  state.timer = setInterval(poll, POLL_MS);
}

function stopPolling() {
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
}

// --- wiring --------------------------------------------------------------------------------------------------

function wire() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem(SAVED.token, state.token);
    enter();
  });
  $("user-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.user = $("user-id").value.trim();
    sessionStorage.setItem(SAVED.user, state.user);
    enter();
  });
  $("sign-out").addEventListener("click", () => signOut(""));
  $("todo-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    search().then(renderTodos, (error) => handleLoss(error) || showProblem(error.message));
  });
  $("clear-search").addEventListener("click", () => {
    $("search").value = "";
    search().then(renderTodos, (error) => showProblem(error.message));
    $("search").focus();
  });
  $("status-filter").addEventListener("change", renderTodos);
  $("profile-form").addEventListener("submit", saveProfile);
  $("profile-form").addEventListener("input", () => { state.profileDirty = true; });
  $("profile-reset").addEventListener("click", () => { state.profileDirty = false; fillProfile(); });
  $("instructions-form").addEventListener("submit", saveInstructions);
  $("instructions-form").addEventListener("input", () => { state.instructionsDirty = true; });
  $("instructions-reset").addEventListener("click", () => { state.instructionsDirty = false; fillInstructions(); });
  $("more-history").addEventListener("click", () => {
    state.historyShown += HISTORY_STEP;
    load(true).catch((error) => showProblem(error.message));
  });
  $("todos-title").tabIndex = -1;
  document.addEventListener("visibilitychange", poll);
}

async function boot() {
  wire();
  let session;
  try {
    const response = await fetch(new URL(`${API}session`, document.baseURI), { cache: "no-store" });
    session = await response.json();
  } catch {
    showProblem("The server cannot be reached; is it still running?");
    return;
  }
  state.auth = Boolean(session.auth);
  state.defaultUser = session.default_user || "";
  $("default-user").textContent = state.defaultUser;
  if (state.auth ? state.token : state.user) await enter();
  else showSignIn();
}

boot();
