// The memory page: sign in, show one user's memories of every declared kind, edit them, undo changes, and follow
// the agent's changes. Every kind is drawn and edited from its JSON schema by the same code (the ToDo list too).
// Talks only to this server's /memories/api/ endpoints; builds every element with textContent, never HTML.
"use strict";

const API = "memories/api/";
const POLL_MS = 4000;
const HISTORY_STEP = 50;
const ACTIONS = { created: "added", updated: "changed", deleted: "deleted" };
const UNDONE = { created: "restored (undo)", updated: "changed back (undo)", deleted: "removed again (undo)" };
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
  filters: {},
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

function humanized(name) {
  return capitalized(String(name).replace(/_/g, " "));
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

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function lines(text) {
  return text.split("\n").map((line) => line.trim()).filter(Boolean);
}

function isEmpty(value) {
  return value === null || value === undefined || value === "" || (Array.isArray(value) && !value.length)
    || (typeof value === "object" && !Array.isArray(value) && !Object.keys(value).length);
}

// A document without its empty fields, for telling whether an edit changed anything (as the server's history does).
function filled(value) {
  return Object.fromEntries(Object.entries(value || {}).filter(([, item]) => !isEmpty(item)));
}

let uniqueIds = 0;
function uniqueId(prefix) {
  uniqueIds += 1;
  return `${prefix}-${uniqueIds}`;
}

// --- dates and durations -------------------------------------------------------------------------------------

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });

function parseDate(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? null : date;
}

function showDate(iso) {
  const date = parseDate(iso);
  return date ? dateFormat.format(date) : String(iso);
}

function showDay(iso) {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(String(iso)) ? parseDate(`${iso}T00:00:00Z`) : null;
  return date ? dayFormat.format(date) : String(iso);
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

// --- JSON schemas: what shape a field has ---------------------------------------------------------------------

// A field's schema with `$ref`s followed, one-branch `allOf` merged, and `anyOf: [X, null]` read as optional X.
function shape(root, schema) {
  let current = schema || {};
  let nullable = false;
  for (let depth = 0; depth < 20; depth += 1) {
    const { $ref, allOf, anyOf, ...annotations } = current;
    if ($ref) {
      current = { ...(root.$defs || {})[$ref.split("/").pop()], ...annotations };
    } else if (allOf && allOf.length === 1) {
      current = { ...allOf[0], ...annotations };
    } else if (anyOf && anyOf.some((option) => option.type === "null") && anyOf.length === 2) {
      nullable = true;
      current = { ...anyOf.find((option) => option.type !== "null"), ...annotations };
    } else {
      break;
    }
  }
  return { ...current, nullable: nullable || current.type === "null" };
}

// What a field is, for drawing and editing it: text, date-time, date, time, integer, number, boolean, choice,
// lines (a list of plain values), choices (a list of enum values), records (a list of objects), record, or json.
function fieldType(root, field) {
  if (field.enum) return "choice";
  if (field.type === "string") return ["date-time", "date", "time"].includes(field.format) ? field.format : "text";
  if (["integer", "number", "boolean"].includes(field.type)) return field.type;
  if (field.type === "array") {
    const items = shape(root, field.items);
    if (items.enum) return "choices";
    if (items.type === "object" && items.properties) return "records";
    if (["string", "integer", "number"].includes(items.type)) return "lines";
    return "json";
  }
  if (field.type === "object" && field.properties) return "record";
  return "json";
}

function properties(root, schema) {
  return Object.entries(schema.properties || {}).map(([name, field]) => ({ name, field: shape(root, field) }));
}

// A field's unit when its description gives one, "(minutes)" as the ToDo's time to complete does.
function unitOf(field) {
  const found = /\((minutes)\)/i.exec(field.description || "");
  return found ? found[1].toLowerCase() : "";
}

function fieldLabel(name, field) {
  const unit = unitOf(field);
  return unit && !name.toLowerCase().includes(unit) ? `${humanized(name)} (${unit})` : humanized(name);
}

// A value as the page writes it in a sentence or a table cell: dates readable, lists and records flattened.
function showValue(root, field, value) {
  if (isEmpty(value)) return "none";
  const type = fieldType(root, field);
  if (type === "date-time") return showDate(value);
  if (type === "date") return showDay(value);
  if (type === "boolean" && typeof value === "boolean") return value ? "yes" : "no";
  if ((type === "integer" || type === "number") && unitOf(field) === "minutes" && typeof value === "number") return showMinutes(value);
  if (Array.isArray(value)) {
    const items = field.items ? shape(root, field.items) : {};
    return shorten(value.map((item) => showValue(root, items, item)).join(", "), 80);
  }
  if (typeof value === "object") {
    const shown = Object.entries(value).filter(([, item]) => !isEmpty(item)).map(([name, item]) => {
      const inner = field.properties && field.properties[name] ? shape(root, field.properties[name]) : {};
      return `${humanized(name).toLowerCase()} ${showValue(root, inner, item)}`;
    });
    return shorten(`(${shown.join(", ")})`, 80);
  }
  return shorten(value, 80);
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

function documentPath(kind, key) {
  return `kinds/${encodeURIComponent(kind.name)}/documents/${encodeURIComponent(key)}`;
}

// Run one change; on success show `describe(result)` and reload (`fromEditor`: with the editor closed), on a
// conflict close the editor and reload, and always re-enable the button. A write the server found to change
// nothing (`saved: false`) says so.
async function change(button, request, describe, fromEditor = false) {
  if (button) button.disabled = true;
  try {
    const { data } = await request();
    let text = data.saved === false ? "Nothing changed." : describe(data);
    if (data.secrets && data.secrets.length) text += ` Left out as secret: ${data.secrets.join(", ")}.`;
    if (fromEditor) state.editing = null;
    showNotice(text);
    return true;
  } catch (error) {
    if (error.status === 409) state.editing = null;
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
    renderSections();
    renderKinds();
    renderPending();
    renderHistory();
  });
}

// --- the memory kinds: one panel each, drawn from the kind's JSON schema ---------------------------------------

function kindNamed(name) {
  return state.view.kinds.find((kind) => kind.name === name);
}

function panelId(kind) {
  return `kind-${kind.name}`;
}

// The schema of a collection's `status_field` when its documents can be closed and reopened (a choice with open
// and closed values), or null. The ToDo list's is `status`: "not started" and "in progress" are open.
function statusField(kind) {
  const declared = kind.collection && kind.status_field && kind.schema.properties ? kind.schema.properties[kind.status_field] : null;
  const field = declared ? shape(kind.schema, declared) : null;
  return field && field.enum && kind.open_statuses.length && field.enum.some((value) => !kind.open_statuses.includes(value)) ? field : null;
}

function isClosed(kind, value) {
  return Boolean(kind.status_field) && isRecord(value) && !kind.open_statuses.includes(value[kind.status_field]);
}

// The value that closes a document: the first closed choice ("done" for a ToDo).
function closingStatus(kind, field) {
  return field.enum.find((value) => !kind.open_statuses.includes(value));
}

// What a document is called in buttons, headings and notices: its summary field, or its key when that is empty.
function documentName(kind, entry) {
  if (!kind.collection) return capitalized(kind.title);
  const summary = entry.value ? entry.value[kind.summary_field] : null;
  return typeof summary === "string" && summary ? summary : `the ${kind.label} stored as ${entry.key}`;
}

function renderSections() {
  $("search-form").hidden = !state.view.kinds.some((kind) => kind.searchable);
  $("sections").replaceChildren(
    ...state.view.kinds.map((kind) => el("a", { href: `#${panelId(kind)}`, text: capitalized(kind.title) })),
    ...(state.view.pending.length ? [el("a", { href: "#pending", text: "Not saved yet" })] : []),
    el("a", { href: "#history", text: "History" }),
  );
}

// Each panel is drawn afresh, but the one holding an open editor is left alone (what the user typed stays, and
// so does the keyboard focus).
function renderKinds() {
  const container = $("kinds");
  const wanted = new Set(state.view.kinds.map(panelId));
  for (const child of [...container.children]) if (!wanted.has(child.id)) child.remove();
  let previous = null;
  for (const kind of state.view.kinds) {
    const existing = $(panelId(kind));
    const panel = existing && state.editing && state.editing.kind === kind.name ? existing : kindPanel(kind);
    if (existing && existing !== panel) existing.replaceWith(panel);
    else if (!existing) {
      if (previous) previous.after(panel);
      else container.prepend(panel);
    }
    previous = panel;
  }
}

function entriesShown(kind) {
  const all = state.view.documents[kind.name] || [];
  let shown = state.results && kind.searchable ? state.results.results.filter((found) => found.kind === kind.name) : all;
  const filter = state.filters[kind.name] || "all";
  if (filter === "open") shown = shown.filter((entry) => !isClosed(kind, entry.value));
  else if (filter !== "all") shown = shown.filter((entry) => isRecord(entry.value) && entry.value[kind.status_field] === filter);
  return shown;
}

function statusFilter(kind, status) {
  const id = `${panelId(kind)}-status`;
  const select = el("select", { id, "data-focus": id, onchange: (event) => { state.filters[kind.name] = event.currentTarget.value; render(); } },
    el("option", { value: "all", text: "All (open first)" }),
    el("option", { value: "open", text: "Open" }),
    status.enum.map((value) => el("option", { value, text: capitalized(String(value)) })),
  );
  select.value = state.filters[kind.name] || "all";
  return el("div", { class: "field filter" }, el("label", { for: id, text: "Status" }), select);
}

function kindPanel(kind) {
  const id = panelId(kind);
  const all = state.view.documents[kind.name] || [];
  const status = kind.collection ? statusField(kind) : null;
  const count = !kind.collection ? null
    : status ? `(${all.filter((entry) => !isClosed(kind, entry.value)).length} open, ${all.length} in all)` : `(${all.length})`;
  const heading = el("h2", { id: `${id}-title`, tabindex: -1 }, capitalized(kind.title), count ? el("span", { class: "count", text: ` ${count}` }) : null);
  const panel = el("section", { id, class: "panel", "aria-labelledby": `${id}-title` }, heading,
    el("p", { class: "hint", text: capitalized(kind.description) }));
  if (kind.collection) {
    const shown = entriesShown(kind);
    panel.append(el("div", { class: "tools" },
      status ? statusFilter(kind, status) : null,
      el("button", { type: "button", "data-focus": `${kind.name}:add`, text: `Add ${kind.label}`, onclick: () => openEditor(kind, null, panel) }),
    ));
    const list = el("ul", { class: "cards" }, shown.map((entry) => documentCard(kind, entry)));
    panel.append(list);
    if (!shown.length) {
      panel.append(el("p", { class: "empty", text: all.length ? `No ${kind.label} matches this status or search.` : `No ${kind.title} yet.` }));
    }
  } else {
    const entry = all[0] || { key: kind.key, value: null, problem: null };
    panel.append(el("ul", { class: "cards single" }, documentCard(kind, entry)));
  }
  return panel;
}

// --- one document: a card showing it, with its buttons --------------------------------------------------------

// A document's fields as a table (`kind`: the document's kind, for its status and deadline; null for a nested
// record).
function fieldsList(root, schema, value, kind = null) {
  return el("dl", {}, properties(root, schema).flatMap(({ name, field }) => [
    el("dt", { text: humanized(name) }),
    el("dd", {}, fieldValue(root, name, field, value[name], value, kind)),
  ]));
}

// One field's value in a card: lists as lists, records as nested tables, the status as a badge, and a deadline
// passed on an open document marked.
function fieldValue(root, name, field, value, document, kind) {
  const type = fieldType(root, field);
  if (type === "records" && Array.isArray(value) && value.length) {
    const items = shape(root, field.items);
    return el("ul", { class: "records" }, value.map((item) => el("li", {}, isRecord(item) ? fieldsList(root, items, item) : showValue(root, items, item))));
  }
  if (type === "record" && isRecord(value)) return fieldsList(root, field, value);
  if (type === "lines" && Array.isArray(value) && value.length) {
    return el("ul", { "aria-label": humanized(name) }, value.map((item) => el("li", { text: String(item) })));
  }
  if (kind && name === kind.status_field && !isEmpty(value)) return el("span", { class: "status", text: String(value) });
  const late = kind && name === kind.deadline_field && !isEmpty(value) && !isClosed(kind, document)
    && parseDate(value) && parseDate(value).getTime() < Date.now();
  return [showValue(root, field, value), late ? el("span", { class: "late", text: " · overdue" }) : null];
}

function isRecord(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function documentCard(kind, entry) {
  const name = documentName(kind, entry);
  const id = uniqueId("card");
  const focus = `${kind.name}:${entry.key}`;
  const status = entry.problem ? null : statusField(kind);
  const closed = status && isClosed(kind, entry.value);
  const card = el("li", { class: ["card", closed ? "closed" : "", entry.problem ? "invalid" : ""].filter(Boolean).join(" "), "data-key": entry.key, "aria-labelledby": kind.collection ? id : null });
  if (kind.collection) card.append(el("h3", { id, text: entry.problem ? `Not a valid ${kind.label}: ${shorten(name, 60)}` : name }));
  if (entry.problem) {
    const replaces = kind.collection ? "saving the editor's form replaces it" : "saving the form replaces it";
    card.append(
      el("p", { class: "problem-text", text: `What is stored as your ${kind.collection ? kind.label : kind.title} does not fit its schema (${entry.problem}); ${replaces}.` }),
      el("pre", { class: "raw", text: JSON.stringify(entry.value, null, 2) }),
    );
  } else if (entry.value === null) {
    card.append(el("p", { class: "empty", text: `No ${kind.title} yet.` }));
  } else if (kind.text) {
    card.append(el("p", { class: "text", text: typeof entry.value.memory === "string" ? entry.value.memory : "" }));
  } else {
    const schema = kind.collection ? { ...kind.schema, properties: Object.fromEntries(Object.entries(kind.schema.properties || {}).filter(([field]) => field !== kind.summary_field)) } : kind.schema;
    card.append(fieldsList(kind.schema, schema, entry.value, kind));
  }
  if (!entry.problem && entry.value !== null) card.append(...sourceLines(kind, entry));
  const closing = status ? closingStatus(kind, status) : null;
  const toggle = status
    ? closed
      ? el("button", { type: "button", class: "quiet", "data-focus": `${focus}:toggle`, "aria-label": `Reopen: ${name}`, text: "Reopen", onclick: (event) => setStatus(kind, entry, kind.open_statuses[0], event.currentTarget) })
      : el("button", { type: "button", "data-focus": `${focus}:toggle`, "aria-label": `Mark ${closing}: ${name}`, text: `Mark ${closing}`, onclick: (event) => setStatus(kind, entry, closing, event.currentTarget) })
    : null;
  card.append(el("div", { class: "buttons" },
    toggle,
    el("button", { type: "button", class: "quiet", "data-focus": `${focus}:edit`, "aria-label": `Edit: ${name}`, text: "Edit", onclick: () => openEditor(kind, entry, card) }),
    kind.collection
      ? el("button", { type: "button", class: "danger", "data-focus": `${focus}:delete`, "aria-label": `Delete: ${name}`, text: "Delete", onclick: (event) => removeDocument(kind, entry, event.currentTarget) })
      : null,
  ));
  return card;
}

// Where a memory's current value came from: the user's words, the thread and the date, linked to the change in the
// history (which retention may have pruned: the source stays). One line for a collection's document, one per filled
// field of a single document.
function sourceLines(kind, entry) {
  const sources = state.view.sources || {};
  const keyed = kind.collection ? [[null, `${kind.name}:${entry.key}`]]
    : Object.keys(entry.value).filter((name) => !isEmpty(entry.value[name])).map((name) => [name, `${kind.name}:${entry.key}:${name}`]);
  return keyed.filter(([, key]) => sources[key]).map(([name, key]) => {
    const source = sources[key];
    const where = source.thread_id ? `thread ${source.thread_id}` : "no thread";
    const label = name && !kind.text ? `${humanized(name)}: ` : "";
    return el("p", { class: "source" },
      `${label}from ${quoted(shorten(source.quote, 140))} — ${where}, `,
      el("a", { href: `#change-${source.change_id}`, title: "The change in the history" },
        el("time", { datetime: source.said_at, text: showDate(source.said_at) })));
  });
}

function setStatus(kind, entry, status, button) {
  const verb = kind.open_statuses.includes(status) ? "Reopened" : `Marked ${status}`;
  return change(button, () => api("PATCH", documentPath(kind, entry.key), { value: { [kind.status_field]: status }, base: entry.value }),
    () => `${verb}: ${quoted(documentName(kind, entry))}.`);
}

async function removeDocument(kind, entry, button) {
  const removed = await change(button, () => api("DELETE", documentPath(kind, entry.key), { base: entry.value }),
    () => `Deleted ${quoted(documentName(kind, entry))}. To bring it back, undo the change in the history below.`);
  if (removed) $(`${panelId(kind)}-title`).focus();
}

// --- editing: a form generated from the schema -----------------------------------------------------------------

class FormProblem extends Error {}

function withHint(field, id) {
  return field.description ? el("p", { id: `${id}-hint`, class: "hint", text: field.description }) : null;
}

function labelled(id, label, field, control) {
  control.id = id;
  if (field.description) control.setAttribute("aria-describedby", `${id}-hint`);
  return el("div", { class: "field" }, el("label", { for: id, text: label }), control, withHint(field, id));
}

// A control for one field: `{ node, read }`, where `read()` gives the field's value from what the user typed
// (or throws a FormProblem saying what is wrong). `value` is the stored value, or undefined for a new document.
function control(root, name, field, value, required, label = fieldLabel(name, field), multiline = false) {
  const id = uniqueId(`edit-${name}`);
  const type = fieldType(root, field);
  const initial = value === undefined ? field.default : value;
  // What a field left empty is: null when it may be, else its default, else "" for text (the server says why
  // that is wrong, if it is).
  const empty = field.nullable ? null : field.default !== undefined ? field.default : type === "text" ? "" : null;
  if (type === "choice") {
    const blank = field.nullable || (initial === undefined && !required);
    const select = el("select", {},
      blank ? el("option", { value: "", text: "—" }) : null,
      field.enum.map((option, index) => el("option", { value: String(index), text: String(option), selected: same(option, initial) })));
    if (initial === undefined || initial === null) select.value = blank ? "" : "0";
    return { node: labelled(id, label, field, select), read: () => (select.value === "" ? null : field.enum[Number(select.value)]) };
  }
  if (type === "boolean" && !field.nullable) {
    const box = el("input", { type: "checkbox", checked: initial === true });
    box.id = id;
    return { node: el("div", { class: "field check" }, box, el("label", { for: id, text: label }), withHint(field, id)), read: () => box.checked };
  }
  if (type === "boolean") {
    const select = el("select", {}, el("option", { value: "", text: "—" }), el("option", { value: "yes", text: "yes" }), el("option", { value: "no", text: "no" }));
    select.value = initial === true ? "yes" : initial === false ? "no" : "";
    return { node: labelled(id, label, field, select), read: () => (select.value === "" ? null : select.value === "yes") };
  }
  if (type === "integer" || type === "number") {
    const input = el("input", { type: "number", step: type === "integer" ? 1 : "any", min: field.minimum ?? field.exclusiveMinimum, max: field.maximum ?? field.exclusiveMaximum, inputmode: type === "integer" ? "numeric" : "decimal" });
    input.value = typeof initial === "number" ? String(initial) : "";
    return {
      node: labelled(id, label, field, input),
      read: () => {
        if (input.value === "") return empty;
        const number = Number(input.value);
        if (!Number.isFinite(number)) throw new FormProblem(`${label} must be a number.`);
        return number;
      },
    };
  }
  if (type === "date-time") {
    const input = el("input", { type: "datetime-local" });
    input.value = typeof initial === "string" ? localInput(initial) : "";
    const shown = input.value;
    return { node: labelled(id, `${label} (your time zone${field.nullable ? "; empty for none" : ""})`, field, input), read: () => (input.value === shown && typeof initial === "string" ? initial : isoFromInput(input.value) ?? empty) };
  }
  if (type === "date" || type === "time") {
    const input = el("input", { type });
    input.value = typeof initial === "string" ? initial : "";
    return { node: labelled(id, label, field, input), read: () => input.value || empty };
  }
  if (type === "text") {
    const attributes = { required: required && !field.nullable, minlength: field.minLength, maxlength: field.maxLength };
    const input = multiline ? el("textarea", { rows: 4, ...attributes }) : el("input", { type: "text", ...attributes });
    input.value = typeof initial === "string" ? initial : "";
    return { node: labelled(id, label, field, input), read: () => input.value.trim() || empty };
  }
  if (type === "lines") {
    const items = shape(root, field.items);
    const area = el("textarea", { rows: 3 });
    area.value = Array.isArray(initial) ? initial.join("\n") : "";
    return {
      node: labelled(id, `${label} (one per line)`, field, area),
      read: () => lines(area.value).map((line) => {
        if (items.type === "string") return line;
        const number = Number(line);
        if (!Number.isFinite(number)) throw new FormProblem(`Each line of ${label} must be a number.`);
        return number;
      }),
    };
  }
  if (type === "choices") {
    const items = shape(root, field.items);
    const boxes = items.enum.map((option) => {
      const box = el("input", { type: "checkbox", id: uniqueId(`edit-${name}`), checked: Array.isArray(initial) && initial.some((chosen) => same(chosen, option)) });
      return { option, box, node: el("div", { class: "check" }, box, el("label", { for: box.id, text: String(option) })) };
    });
    return { node: el("fieldset", { class: "choices" }, el("legend", { text: label }), boxes.map((choice) => choice.node)), read: () => boxes.filter((choice) => choice.box.checked).map((choice) => choice.option) };
  }
  if (type === "record") return recordControl(root, field, isRecord(initial) ? initial : undefined, label, field.nullable);
  if (type === "records") return recordsControl(root, name, field, Array.isArray(initial) ? initial : [], label);
  const area = el("textarea", { rows: 4, spellcheck: "false" });
  area.value = initial === undefined ? "" : JSON.stringify(initial, null, 2);
  return {
    node: labelled(id, `${label} (JSON)`, field, area),
    read: () => {
      if (!area.value.trim()) return empty;
      try {
        return JSON.parse(area.value);
      } catch {
        throw new FormProblem(`${label} is not valid JSON.`);
      }
    },
  };
}

// The fields of an object, in a fieldset; an optional one left empty is null (so none of its fields is required
// of the browser's form check).
function recordControl(root, schema, value, label, nullable) {
  const required = nullable ? [] : schema.required || [];
  const controls = properties(root, schema).map(({ name, field }) => ({ name, ...control(root, name, field, value ? value[name] : undefined, required.includes(name)) }));
  const read = () => {
    const record = Object.fromEntries(controls.map((part) => [part.name, part.read()]));
    return nullable && Object.values(record).every(isEmpty) ? null : record;
  };
  const node = label === null ? el("div", { class: "fields" }, controls.map((part) => part.node))
    : el("fieldset", { class: "fields" }, el("legend", { text: label }), controls.map((part) => part.node));
  return { node, read };
}

// A list of objects: one fieldset per item, each with its Remove button, and a button adding one more.
function recordsControl(root, name, field, values, label) {
  const items = shape(root, field.items);
  const itemName = humanized(items.title || name).toLowerCase();
  const rows = [];
  const list = el("ol", { class: "records" });
  // Each item's legend and Remove button say its place in the list, renumbered when one is removed.
  const renumber = () => rows.forEach((row, index) => {
    row.legend.textContent = `${capitalized(itemName)} ${index + 1}`;
    row.remove.setAttribute("aria-label", `Remove ${itemName} ${index + 1}`);
  });
  const add = (value) => {
    const row = recordControl(root, items, value, null, false);
    row.legend = el("legend");
    row.remove = el("button", { type: "button", class: "quiet", text: "Remove", onclick: () => {
      rows.splice(rows.indexOf(row), 1);
      row.item.remove();
      renumber();
      addButton.focus();
    } });
    row.item = el("li", {}, el("fieldset", {}, row.legend, row.node, el("div", { class: "buttons" }, row.remove)));
    rows.push(row);
    list.append(row.item);
    renumber();
    return row;
  };
  const addButton = el("button", { type: "button", class: "quiet", text: `Add ${itemName}`, onclick: () => {
    const row = add(undefined);
    const first = row.item.querySelector("input, select, textarea");
    if (first) first.focus();
  } });
  values.forEach((value) => add(isRecord(value) ? value : undefined));
  return {
    node: el("fieldset", { class: "list" }, el("legend", { text: label }), withHint(field, uniqueId("list")), list, addButton),
    read: () => rows.map((row) => row.read()),
  };
}

// The editor of one document (`entry` null: a new one of a collection), in place of its card or at the top of
// its panel's list.
function openEditor(kind, entry, where) {
  if (state.editing) closeEditor(false);
  const key = entry ? entry.key : null;
  state.editing = { kind: kind.name, key };
  const stored = entry && entry.value && !entry.problem ? entry.value : entry && isRecord(entry.value) ? entry.value : undefined;
  const name = entry ? documentName(kind, entry) : `new ${kind.label}`;
  const fields = kind.text
    ? control(kind.schema, "memory", shape(kind.schema, kind.schema.properties.memory), stored ? stored.memory : undefined, true, `${capitalized(kind.description)} (at most ${kind.max_chars.toLocaleString("en")} characters)`, true)
    : recordControl(kind.schema, kind.schema, stored, null, false);
  const form = el("form", { class: "editor", "aria-label": entry ? `Edit ${name}` : `Add a ${kind.label}` },
    fields.node,
    el("div", { class: "buttons" },
      el("button", { type: "submit", text: kind.collection ? "Save" : `Save ${kind.title}` }),
      el("button", { type: "button", class: "quiet", text: "Cancel", onclick: () => closeEditor(true) }),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let value;
    try {
      value = kind.text ? { memory: fields.read() } : fields.read();
    } catch (error) {
      if (!(error instanceof FormProblem)) throw error;
      showProblem(error.message);
      return;
    }
    if (entry && entry.value && !entry.problem && same(filled(value), filled(entry.value))) {
      closeEditor(true);
      showNotice("Nothing changed.");
      return;
    }
    const button = form.querySelector("button[type=submit]");
    const request = entry
      ? () => api("PUT", documentPath(kind, entry.key), { value, base: entry.value })
      : () => api("POST", `kinds/${encodeURIComponent(kind.name)}/documents`, { value });
    const saved = await change(button, request, (data) => {
      if (!kind.collection) return `Saved your ${kind.title}.`;
      const called = documentName(kind, { key: data.key, value: data.value });
      return entry ? `Saved ${quoted(called)}.` : `Added ${kind.label} ${quoted(called)}.`;
    }, true);
    if (saved) refocus(kind.name, key);
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeEditor(true);
  });
  if (entry) {
    where.classList.add("editing");
    where.replaceChildren(form);
  } else {
    const card = el("li", { class: "card editing" }, form);
    const list = where.querySelector(".cards");
    list.prepend(card);
    const empty = where.querySelector(".empty");
    if (empty) empty.remove();
  }
  const first = form.querySelector("input, select, textarea");
  if (first) first.focus();
}

function closeEditor(focusBack) {
  const editing = state.editing;
  state.editing = null;
  if (state.view) render();
  if (focusBack && editing) refocus(editing.kind, editing.key);
}

// Put the keyboard focus back on the button that opened an editor (Edit, or Add for a new document).
function refocus(kindName, key) {
  const focus = key === null ? `${kindName}:add` : `${kindName}:${key}:edit`;
  const button = document.querySelector(`[data-focus="${CSS.escape(focus)}"]`);
  if (button) button.focus();
}

// --- search: every kind with indexed fields ---------------------------------------------------------------------

async function search(announce = true) {
  const query = $("search").value.trim();
  $("clear-search").hidden = !query;
  if (!query) {
    state.results = null;
    $("search-note").textContent = "";
    return;
  }
  const { data } = await api("GET", `search?query=${encodeURIComponent(query)}&limit=20`);
  state.results = data;
  const searched = state.view.kinds.filter((kind) => kind.searchable).map((kind) => kind.title).join(", ");
  const how = data.semantic
    ? `Showing the memories closest in meaning to ${quoted(query)}, best first (searched: ${searched}).`
    : `Showing the memories that contain ${quoted(query)} (searched: ${searched}).`;
  $("search-note").textContent = how;
  if (announce) showNotice(`${data.results.length} found. ${how}`);
}

// --- history -------------------------------------------------------------------------------------------------

function subject(entry) {
  const kind = kindNamed(entry.kind);
  if (!kind) return entry.kind;
  if (!kind.collection) return capitalized(kind.title);
  const stored = entry.after || entry.before || {};
  const summary = stored[kind.summary_field];
  return `${capitalized(kind.label)} ${quoted(shorten(isEmpty(summary) ? entry.key : String(summary), 60))}`;
}

function fieldChanges(entry) {
  if (entry.action !== "updated") return [];
  const kind = kindNamed(entry.kind);
  const root = kind ? kind.schema : {};
  const before = entry.before || {};
  const after = entry.after || {};
  return Object.keys({ ...before, ...after })
    .filter((name) => !same(isEmpty(before[name]) ? null : before[name], isEmpty(after[name]) ? null : after[name]))
    .map((name) => {
      const field = root.properties && root.properties[name] ? shape(root, root.properties[name]) : {};
      const called = kind && kind.text && name === "memory" ? "text" : humanized(name).toLowerCase();
      return `${called}: ${showValue(root, field, before[name])} → ${showValue(root, field, after[name])}`;
    });
}

// A free-text change (the instructions) in full: each sentence removed ("- …") and added ("+ …"), from the server.
function diffList(diff) {
  return el("ul", { class: "diff", "aria-label": "Sentences removed and added" },
    diff.map((line) => el("li", { class: line.startsWith("+ ") ? "added" : "removed", text: line })));
}

function historyItem(entry) {
  const title = `${subject(entry)} ${(entry.undoes ? UNDONE : ACTIONS)[entry.action] || entry.action}`;
  const diff = entry.diff || [];
  const changes = diff.length ? [] : fieldChanges(entry);
  // The user's own words when a chat made the change; the page's or CLI's note otherwise (an undo needs none).
  const said = entry.thread_id ? quoted(shorten(entry.message, 200)) : entry.undoes ? "" : entry.message;
  return el("li", { id: `change-${entry.id}` },
    el("div", {},
      el("p", { class: "when" }, el("time", { datetime: entry.time, text: showDate(entry.time) })),
      el("p", { class: "what", text: title }),
      changes.length ? el("p", { class: "fields", text: changes.join("; ") }) : null,
      diff.length ? diffList(diff) : null,
      said ? el("p", { class: "message", text: said }) : null,
    ),
    el("button", {
      type: "button", class: "quiet", "data-focus": `undo:${entry.id}`, "aria-label": `Undo: ${title}`, text: "Undo",
      onclick: (event) => undoChange(entry, title, event.currentTarget),
    }),
  );
}

// Undo one change; the notice names the change undone (the answer is the undo's own history entry).
function undoChange(entry, title, button) {
  return change(button, () => api("POST", `history/${encodeURIComponent(entry.id)}/undo`), () => `Undone: ${title}.`);
}

function renderHistory() {
  const { history, history_total: total } = state.view;
  $("history-count").textContent = `(${total})`;
  $("history-list").replaceChildren(...history.map(historyItem));
  $("history-empty").hidden = history.length > 0;
  $("more-history").hidden = history.length >= total;
}

// --- reminders: the user's crons, listed read-only from the server's own crons API (signed-in users only) ------

const REMINDERS_URL = "runs/crons/search";

function reminderMessage(cron) {
  const messages = ((cron.payload || {}).input || {}).messages || [];
  const last = messages[messages.length - 1];
  return last && typeof last.content === "string" ? last.content : "";
}

function reminderItem(cron) {
  const zone = cron.timezone || (cron.payload || {}).timezone || "UTC";
  const when = cron.enabled === false ? "paused" : `next ${showDate(cron.next_run_date)}`;
  return el("li", {},
    el("p", {}, `${cron.schedule} (${zone})`, " · ", el("span", { class: "when" }, when)),
    el("p", { class: "message" }, reminderMessage(cron)));
}

async function loadReminders() {
  $("reminders").hidden = !state.auth;
  if (!state.auth) return;
  let crons;
  try {
    const response = await fetch(new URL(REMINDERS_URL, document.baseURI), {
      method: "POST",
      cache: "no-store",
      headers: { Accept: "application/json", "Content-Type": "application/json", Authorization: `Bearer ${state.token}` },
      body: JSON.stringify({ limit: 100, sort_by: "next_run_date", sort_order: "asc" }),
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    crons = await response.json();
  } catch (error) {
    $("reminders-count").textContent = "";
    $("reminders-list").replaceChildren();
    $("reminders-empty").hidden = false;
    $("reminders-empty").textContent = `The reminders could not be read (${error.message}).`;
    return;
  }
  $("reminders-count").textContent = `(${crons.length})`;
  $("reminders-list").replaceChildren(...crons.map(reminderItem));
  $("reminders-empty").textContent = "No reminders.";
  $("reminders-empty").hidden = crons.length > 0;
}

// --- pending changes: the updates that failed, to retry or drop ------------------------------------------------

function pendingItem(entry) {
  const kind = kindNamed(entry.kind);
  const title = `${kind ? capitalized(kind.title) : entry.kind} not saved: ${entry.problem}`;
  return el("li", {},
    el("div", {},
      el("p", { class: "when" }, el("time", { datetime: entry.time, text: showDate(entry.time) })),
      el("p", { class: "what", text: title }),
      entry.message ? el("p", { class: "message", text: quoted(shorten(entry.message, 200)) }) : null,
    ),
    el("div", { class: "buttons" },
      el("button", {
        type: "button", "data-focus": `retry:${entry.id}`, "aria-label": `Retry: ${title}`, text: "Retry",
        onclick: (event) => retryPending(entry, event.currentTarget),
      }),
      el("button", {
        type: "button", class: "quiet", "data-focus": `drop:${entry.id}`, "aria-label": `Drop: ${title}`, text: "Drop",
        onclick: (event) => dropPending(entry, title, event.currentTarget),
      }),
    ),
  );
}

// Retry one: the notice gives the notes of what it saved, or says it is still not saved and why.
function retryPending(entry, button) {
  return change(button, () => api("POST", `pending/${encodeURIComponent(entry.id)}/retry`),
    (data) => `${data.failed ? "Still not saved" : "Saved"}: ${data.notes.join(" ")}`);
}

function dropPending(entry, title, button) {
  return change(button, () => api("DELETE", `pending/${encodeURIComponent(entry.id)}`), () => `Dropped: ${title}.`);
}

function renderPending() {
  const { pending } = state.view;
  $("pending").hidden = pending.length === 0;
  $("pending-count").textContent = `(${pending.length})`;
  $("pending-list").replaceChildren(...pending.map(pendingItem));
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
  Object.assign(state, { token: "", user: "", view: null, etag: null, results: null, editing: null, filters: {} });
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
  await loadReminders();
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
  const searched = () => search().then(render, (error) => handleLoss(error) || showProblem(error.message));
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    searched();
  });
  $("clear-search").addEventListener("click", () => {
    $("search").value = "";
    searched();
    $("search").focus();
  });
  $("more-history").addEventListener("click", () => {
    state.historyShown += HISTORY_STEP;
    load(true).catch((error) => showProblem(error.message));
  });
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
