/* citewell's page: sign in, ask, search and manage documents through the JSON API.
 *
 * Documents are written by whoever uploads them, so every piece of server data reaches the
 * page as text (textContent, attribute values), never as markup: there is no innerHTML here.
 */
"use strict";

(function () {
  const TOKEN_KEY = "citewell.token";
  const CONVERSATION_KEY = "citewell.conversation";  // kept across a reload, for the token it was held under
  const POLL_MS = 700;
  const POLL_LIMIT_MS = 10 * 60 * 1000;
  const SNIPPET_CHARS = 360;

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY),
    session: 0,  // moves on at every sign-in and sign-out: a reply for an earlier caller is dropped
    me: null,
    documents: [],
    drawn: null,  // the documents list as last drawn: redrawn only when it changes
    refreshTimer: null,
    conversation: null,  // the conversation a next question follows up; null starts a new one
    earlier: null,  // {id, cursor}: where the thread's earlier turns are read from; null when it shows turn 1
    oidc: null,  // the OpenID Connect issuer the page signs in with, from /auth/config
    answers: new Map(),  // answer id -> the answer as received or as recorded: a thread's turns with their sources
  };

  /* ---------- small DOM helpers: text only ---------- */

  const $ = (id) => document.getElementById(id);

  /** An element with attributes and children; strings become text nodes, never markup. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    node.replaceChildren();
    return node;
  }

  function show(node, visible) {
    node.hidden = !visible;
  }

  /* ---------- the API ---------- */

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }

    /** "code: message" for the project's typed codes ("unsupported_type: ..."); a framework's class
     *  name ("RequestValidationError") says nothing to a person, so its message stands alone. */
    get text() {
      return this.code && !/^[A-Z]/.test(this.code) ? `${this.code}: ${this.message}` : this.message;
    }
  }

  async function readError(response) {
    const body = await response.text();
    try {
      const error = JSON.parse(body).error;
      if (error && error.message) return new ApiError(response.status, error.code || "", error.message);
    } catch (_) { /* not JSON: fall through */ }
    const xml = /<Code>([^<]*)<\/Code>[\s\S]*?<Message>([^<]*)<\/Message>/.exec(body);  // S3's presigned POST
    if (xml) return new ApiError(response.status, xml[1], xml[2]);
    return new ApiError(response.status, `http_${response.status}`, response.statusText || "the server refused the request");
  }

  /** A JSON request as the signed-in caller. A reply that arrives after the caller changed
   *  (signed out, or in as someone else) is dropped as `stale`, never shown to the next one. */
  async function api(method, path, body, session = state.session) {
    const stale = () => new ApiError(0, "stale", "the caller changed while this request ran");
    if (session !== state.session) throw stale();
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (_) {
      throw new ApiError(0, "unreachable", "The server could not be reached. Is citewell serve still running?");
    }
    if (session !== state.session) throw stale();
    if (!response.ok) {
      const error = await readError(response);
      if (response.status === 401 && state.me) {  // signed in, and the token stopped working (it expired)
        signOut(`You were signed out: ${error.message}`);
      }
      throw error;
    }
    const data = response.status === 204 ? null : await response.json();
    if (session !== state.session) throw stale();
    return data;
  }

  /** One path segment for a document id: ids may hold '/', which must not split the path. */
  const documentPath = (id) => `/documents/${encodeURIComponent(id)}`;

  /* ---------- text helpers ---------- */

  /** Heading path without the repeated title, joined as a trail. */
  function trail(item) {
    const path = (item.section_path || []).filter((h, i) => h && !(i === 0 && h === item.title));
    return path.join(" › ");
  }

  /** "3", "3–5" or "3, 7–8": runs of consecutive numbers as ranges (an elided quote's two records
   *  are not every row between them). */
  function runs(numbers) {
    const found = [];
    for (const n of numbers) {
      const run = found[found.length - 1];
      if (run && n === run[run.length - 1] + 1) run.push(n);
      else found.push([n]);
    }
    return found.map((r) => (r.length === 1 ? String(r[0]) : `${r[0]}–${r[r.length - 1]}`)).join(", ");
  }

  /** "page 3", "pages 3–4", "sheet Bands, row 7", or "" when the source has no such place: a
   *  citation's is its quote's, a passage's the whole passage's. */
  function place(item) {
    const parts = [];
    const pages = item.pages || (item.page != null ? [item.page] : []);
    if (pages.length) parts.push(`${pages.length === 1 ? "page" : "pages"} ${runs(pages)}`);
    if (item.sheet) parts.push(`sheet ${item.sheet}`);
    const rows = item.rows || (item.row != null ? [item.row] : []);
    if (rows.length) parts.push(`${rows.length === 1 ? "row" : "rows"} ${runs(rows)}`);
    return parts.join(", ");
  }

  /** A passage's text for a list: flattened, without the title and headings the line above it
   *  shows already (chunks begin with them), cut at a word near SNIPPET_CHARS. */
  function snippet(text, item) {
    let flat = String(text || "").replace(/\s+/g, " ").trim();
    for (const heading of item ? [item.title, ...(item.section_path || [])] : []) {
      const words = String(heading || "").replace(/\s+/g, " ").trim();
      if (words && flat.startsWith(`${words} `)) flat = flat.slice(words.length + 1);
    }
    if (flat.length <= SNIPPET_CHARS) return flat;
    const cut = flat.lastIndexOf(" ", SNIPPET_CHARS);
    return `${flat.slice(0, cut > SNIPPET_CHARS / 2 ? cut : SNIPPET_CHARS)} …`;
  }

  const SAME = { "'": "['’‘]", "’": "['’‘]", "‘": "['’‘]", '"': '["“”]', "“": '["“”]', "”": '["“”]',
    "-": "[-–—]", "–": "[-–—]", "—": "[-–—]" };

  /** A quote's part as a pattern, as the server's verification reads it: any run of whitespace
   *  (a line wrap) between its words, either kind of quote mark or dash, any case. */
  function partPattern(part) {
    const words = part.split(/\s+/).filter(Boolean);
    const escape = (c) => SAME[c] || c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
    return new RegExp(words.map((w) => Array.from(w, escape).join("")).join("\\s+"), "giu");
  }

  /** Where each part of `quote` sits in `text`, in order: [[start, end), …] or null. An elided
   *  quote ("A … B", two units with text left out between them) has a part on each side of its
   *  ellipsis; each is highlighted, not the text between them. */
  function locate(text, quote) {
    const wanted = String(quote || "").trim();
    if (!wanted) return null;
    const exact = text.indexOf(wanted);
    if (exact >= 0) return [[exact, exact + wanted.length]];
    const parts = wanted.split(/\s*(?:\.\.\.|…)\s*/).map((p) => p.trim()).filter(Boolean);
    const found = [];
    let from = 0;
    for (const part of parts) {
      const pattern = partPattern(part);
      pattern.lastIndex = from;
      const match = pattern.exec(text);
      if (!match) return null;
      found.push([match.index, match.index + match[0].length]);
      from = match.index + match[0].length;
    }
    return found.length ? found : null;
  }

  const shortRevision = (revision) => (revision ? String(revision).slice(0, 12) : "none");

  function when(value) {
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? "" : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  function megabytes(bytes) {
    if (bytes >= 1048576) return `${(bytes / 1048576).toFixed(1)} MB`;
    if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
    return bytes === 1 ? "1 byte" : `${bytes} bytes`;  // an empty file is 0 bytes, not "1 KB"
  }

  /* ---------- notices ---------- */

  function notice(message, kind) {
    const node = $("notice");
    node.textContent = message || "";
    node.className = `notice ${kind || ""}`;
    show(node, Boolean(message));
  }

  /** An error where the user is looking; a stale reply is no one's business any more. */
  function report(id, error, prefix) {
    if (error.code !== "stale") status(id, `${prefix || ""}${error.text}`, "error");
  }

  function status(id, message, kind) {
    const node = $(id);
    node.textContent = message || "";
    node.className = `status ${kind || ""}`;
  }

  /** Why a draft was rejected (verification's codes, citewell/answers/verify.py), said to a reader. */
  const REJECTED_BECAUSE = {
    unknown_source: "it cited a source it was not given",
    uncited: "it cited no source",
    quote_not_in_source: "it quoted words your documents do not say",
    number_not_in_source: "it gave a number your documents do not hold",
    uncited_evidence: "it used words from a passage it did not cite",
    condition_not_in_source: "it named a case your documents do not",
  };

  /** A `degraded` note of the API (an operator's line: "draft rejected: openai (quote_not_in_source:
   *  …); answering extractively") in a reader's words; null for a note this page does not know. */
  function plainNote(note) {
    const text = String(note || "");
    const rejected = /^draft rejected: [^(]*\(([a-z_]+)/.exec(text);
    if (rejected) {
      const why = REJECTED_BECAUSE[rejected[1]] || "it did not match your documents";
      return text.endsWith("; answering extractively")
        ? `The language model's answer was not used (${why}); this answer quotes your documents directly instead.`
        : `The language model's answer was not used (${why}), and nothing could be confirmed instead.`;
    }
    if (text.startsWith("generator unavailable:")) {
      return text.endsWith("; answering extractively")
        ? "The language model could not be reached; this answer quotes your documents directly instead."
        : "Answers could not be checked against your question just now; the passages that came nearest are listed instead.";
    }
    if (text.startsWith("follow-up rewritten by rules")) {
      return "The language model could not be reached, so your follow-up was joined to the earlier question by simple rules.";
    }
    if (text.startsWith("vector lane unavailable")) return "Search by meaning is unavailable just now: these passages match your words only.";
    if (text.startsWith("vector index not ready")) {
      return "Some documents are still being prepared for search by meaning: for now they are found by their words only.";
    }
    if (text.startsWith("reranker unavailable")) return "The passages could not be re-ranked just now: they are in the order the search found them.";
    if (text.startsWith("query expansion unavailable") || text.startsWith("the expansion's passage")) {
      return "Your question was searched as you wrote it, without the related wordings usually added.";
    }
    return null;
  }

  /** The API's `degraded` notes said in a reader's words; the notes themselves, for whoever runs
   *  the server, folded away beneath. */
  function degradedBox(messages) {
    if (!messages || !messages.length) return null;
    const plain = [...new Set(messages.map((m) => plainNote(m) || "Part of citewell was unavailable, so this may be less complete than usual."))];
    const reduced = messages.some((m) => !String(m).startsWith("draft rejected"));
    return el("div", { class: "degraded", role: "note" },
      el("strong", { text: reduced ? "Running in a reduced mode:" : "Checked against your documents:" }),
      el("ul", {}, plain.map((m) => el("li", { text: m }))),
      el("details", { class: "degraded-details" },
        el("summary", { text: "Details for whoever runs citewell" }),
        el("ul", {}, messages.map((m) => el("li", { text: m })))));
  }

  /* ---------- sign in ---------- */

  async function signIn(token) {
    state.session += 1;
    state.token = token.trim();
    try {
      state.me = await api("GET", "/me");
    } catch (error) {
      if (error.code === "stale") return false;  // another sign-in (or a sign-out) came after this one
      state.token = null;
      state.me = null;
      sessionStorage.removeItem(TOKEN_KEY);
      const message = error.status === 401 ? `This token was not accepted: ${error.message}` : error.text;
      const node = $("signin-error");
      node.textContent = message;
      show(node, true);
      return false;
    }
    sessionStorage.setItem(TOKEN_KEY, state.token);
    show($("signin-error"), false);
    $("token").value = "";
    notice("");
    renderIdentity();
    loadHistory();
    resume();
    if (!location.hash || location.hash === "#signin") location.hash = "#ask";
    else route();
    return true;
  }

  function signOut(message) {
    state.session += 1;
    state.token = null;
    state.me = null;
    state.documents = [];
    state.drawn = null;
    sessionStorage.removeItem(TOKEN_KEY);
    stopRefresh();
    // Nothing the last caller could read may stay in the page, shown or hidden.
    for (const id of ["answer", "search-results", "documents", "upload-list", "upload-role-list", "source-body", "thread", "history"]) clear($(id));
    follow(null);
    state.answers.clear();
    show($("thread"), false);
    show($("ask-form"), true);
    for (const id of ["source-title", "confirm-title", "confirm-text"]) $(id).textContent = "";
    delete $("answer").dataset.answerId;
    for (const id of ["ask-status", "search-status", "documents-status", "documents-summary"]) status(id, "");
    show($("answer"), false);
    show($("search-results"), false);
    $("question").value = "";
    $("search-question").value = "";
    for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
    renderIdentity();
    notice(message || "", message ? "warn" : "");
    route();
  }

  /** The caller's roles without the write role (`…:write`), which grants editing, not reading;
   *  all of them if that leaves none. */
  function readingRoles() {
    const roles = [...((state.me && state.me.roles) || [])].sort();
    const reading = roles.filter((role) => !/(^|[:_.-])write$/.test(role));
    return reading.length ? reading : roles;
  }

  function renderIdentity() {
    const me = state.me;
    show($("nav"), Boolean(me));
    show($("whoami"), Boolean(me));
    const who = clear($("who"));
    if (!me) return;
    append(who, [
      el("span", { class: "tenant", text: me.tenant }),
      " ",
      readingRoles().map((role) => el("span", { class: "role", text: role })),
      me.can_write ? el("span", { class: "can-write", text: "can edit documents" }) : null,
    ]);
  }

  /** The demo's identities come as buttons in the page itself (with --demo), so nothing appears
   *  above the sign-in form once it is drawn; their tokens are fetched here, once (again after a
   *  refused one: they expire). */
  let demoTokens = null;
  function demoIdentities() {
    if (!demoTokens) {
      demoTokens = fetch("/demo/identities", { cache: "no-store" })
        .then((response) => (response.ok ? response.json() : []))
        .catch(() => []);
    }
    return demoTokens;
  }

  function wireDemoIdentities() {
    const buttons = document.querySelectorAll("#demo-list button.identity");
    if (!buttons.length) return;
    demoIdentities();
    for (const button of buttons) {
      button.addEventListener("click", async () => {
        const identities = await demoIdentities();
        const identity = Array.isArray(identities) ? identities[Number(button.dataset.index)] : null;
        if (identity && identity.token && (await signIn(identity.token))) return;
        demoTokens = null;
        if (!identity || !identity.token) {
          const node = $("signin-error");
          node.textContent = "The demo's identities could not be fetched from this server; try again.";
          show(node, true);
        }
      });
    }
  }

  /* ---------- sign in with an OpenID Connect provider ---------- */

  // When the server names an issuer (/auth/config), the page signs in as a public client: the
  // authorization code flow with PKCE (S256), state and nonce kept in this tab only. The bearer
  // token it then sends is the ID token: its audience is this page's client id, which the server
  // checks, and it carries the user's groups; an access token is meant for the issuer's own APIs.
  const OIDC_KEY = "citewell.oidc";

  function base64url(bytes) {
    let text = "";
    for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function randomText() {
    return base64url(crypto.getRandomValues(new Uint8Array(32)));
  }

  function oidcError(message) {
    const node = $("oidc-error");
    node.textContent = message;
    show(node, Boolean(message));
  }

  async function loadSignInConfig() {
    try {
      const response = await fetch("/auth/config", { cache: "no-store" });
      if (!response.ok) return;
      state.oidc = (await response.json()).oidc || null;
    } catch (_) {
      return;
    }
    if (!state.oidc) return;
    $("oidc-issuer").textContent = new URL(state.oidc.issuer).host;
    show($("oidc"), true);
  }

  async function beginOidcSignIn() {
    const config = state.oidc;
    if (!config) return;
    if (!window.crypto || !crypto.subtle) {
      oidcError("Signing in needs a secure page (https): this browser offers no hashing here.");
      return;
    }
    const verifier = randomText();
    const pending = { verifier, state: randomText(), nonce: randomText(), hash: location.hash || "" };
    const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
    sessionStorage.setItem(OIDC_KEY, JSON.stringify(pending));
    const query = new URLSearchParams({
      response_type: "code", client_id: config.client_id, redirect_uri: config.redirect_uri, scope: config.scope,
      state: pending.state, nonce: pending.nonce, code_challenge: challenge, code_challenge_method: "S256",
    });
    location.assign(`${config.authorization_endpoint}?${query}`);
  }

  /** Back from the issuer (`?code=…&state=…`, or `?error=…`): the code exchanged for tokens, the
   *  ID token checked for this sign-in's nonce, then signed in with. False when this is no return. */
  async function finishOidcSignIn() {
    const params = new URLSearchParams(location.search);
    if (!params.has("state") || !(params.has("code") || params.has("error"))) return false;
    let pending = null;
    try {
      pending = JSON.parse(sessionStorage.getItem(OIDC_KEY) || "null");
    } catch (_) { /* treated as none */ }
    sessionStorage.removeItem(OIDC_KEY);  // a code and its verifier are good once
    history.replaceState(null, "", location.pathname + ((pending && pending.hash) || ""));  // the code leaves the address bar
    await loadSignInConfig();
    const config = state.oidc;
    if (!pending || !config || params.get("state") !== pending.state) {
      oidcError("This sign-in was not started here (its state does not match): sign in again.");
      return false;
    }
    if (params.has("error")) {
      oidcError(`The identity provider did not sign you in: ${params.get("error_description") || params.get("error")}`);
      return false;
    }
    let tokens;
    try {
      const response = await fetch(config.token_endpoint, {
        method: "POST", cache: "no-store", credentials: "omit",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code", code: params.get("code"), redirect_uri: config.redirect_uri,
          client_id: config.client_id, code_verifier: pending.verifier,
        }),
      });
      tokens = await response.json();
      if (!response.ok) throw new Error(tokens.error_description || tokens.error || `status ${response.status}`);
    } catch (error) {
      oidcError(`The identity provider's token endpoint refused the sign-in: ${error.message}`);
      return false;
    }
    let claims = null;
    try {
      const payload = String(tokens.id_token || "").split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload), (c) => c.charCodeAt(0))));
    } catch (_) { /* no usable ID token */ }
    if (!claims || claims.nonce !== pending.nonce) {
      oidcError("The identity provider's answer is not for this sign-in (no ID token with its nonce).");
      return false;
    }
    oidcError("");
    return signIn(tokens.id_token);
  }

  /* ---------- views ---------- */

  const VIEWS = ["signin", "ask", "search", "documents"];

  function route() {
    let view = (location.hash || "#ask").slice(1);
    if (!VIEWS.includes(view)) view = "ask";
    if (!state.me) view = "signin";
    else if (view === "signin") view = "ask";
    for (const name of VIEWS) show($(`view-${name}`), name === view);
    for (const link of document.querySelectorAll("#nav a")) {
      if (link.dataset.view === view) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    document.title = `${view === "signin" ? "Sign in" : view[0].toUpperCase() + view.slice(1)} · citewell`;
    if (view === "documents") loadDocuments();
    else stopRefresh();
    const focus = { signin: "token", ask: "question", search: "search-question" }[view];
    const active = document.activeElement;
    if (focus && (active === document.body || active.closest("[hidden]"))) $(focus).focus();  // the sign-in button, once hidden
  }

  /* ---------- filters ---------- */

  // The form's "Narrow to" fields as the API's filters (null when none is filled in): lists are
  // comma-separated, empty fields are left out, and the server checks every value.
  function filtersOf(form) {
    const value = (name) => form.elements[name].value.trim();
    const list = (name) => value(name).split(",").map((part) => part.trim()).filter(Boolean);
    const filters = {};
    if (list("filter-doc").length) filters.document_ids = list("filter-doc");
    if (value("filter-prefix")) filters.prefix = value("filter-prefix");
    if (value("filter-source")) filters.source = value("filter-source");
    if (list("filter-tag").length) filters.tags = list("filter-tag");
    if (value("filter-locale")) filters.locale = value("filter-locale");
    if (value("filter-effective")) filters.effective_on = value("filter-effective");
    return Object.keys(filters).length ? filters : null;
  }

  /** "Narrow to" says when its filters are set, so a folded panel does not hide them. */
  function markNarrowed(form) {
    const summary = form.querySelector("details.filters > summary");
    if (summary) summary.textContent = filtersOf(form) ? "Narrow to (filters set)" : "Narrow to";
  }

  /* ---------- ask ---------- */

  async function ask(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question) return;
    const button = event.submitter || event.target.querySelector("button");
    button.disabled = true;
    // The thread stays in order above the question box: the answer shown joins it as an earlier
    // turn, with its sources, and the question asked now follows it, its answer below it.
    settleLatest();
    const asked = addTurn({ asked: question });
    show($("thread"), true);
    status("ask-status", "Reading your documents…", "busy");
    const body = { question };
    if (state.conversation) body.conversation_id = state.conversation;
    try {
      const filters = filtersOf($("ask-form"));
      if (filters) body.filters = filters;
      const answer = await streamed(body);
      if (answer.answer_id) state.answers.set(answer.answer_id, answer);
      follow(answer.conversation_id || null);
      if (!state.conversation || !(await loadThread(state.conversation, true))) {
        asked.replaceWith(addTurn({ asked: question, question: answer.question || question }));
      }
      status("ask-status", "");
      renderAnswer(answer, Boolean(filters));
      $("question").value = "";
      loadHistory();
    } catch (error) {
      asked.remove();
      show($("thread"), $("thread").childElementCount > 0);
      clear($("answer"));
      show($("answer"), false);
      report("ask-status", error);
    } finally {
      button.disabled = false;
    }
  }

  /** POST /query as server-sent events: a model's draft is shown as it is written, labelled
   *  unchecked; a retraction replaces it (verification rejected it, or a source changed under it
   *  and the next draft starts afresh); the final event is the answer. A refusal of the request
   *  comes back as JSON with its status, as every other call's does. */
  async function streamed(body, session = state.session) {
    const stale = () => new ApiError(0, "stale", "the caller changed while this request ran");
    const headers = { Accept: "text/event-stream", "Content-Type": "application/json" };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    let response;
    try {
      response = await fetch("/query", { method: "POST", headers, cache: "no-store", body: JSON.stringify(body) });
    } catch (_) {
      throw new ApiError(0, "unreachable", "The server could not be reached. Is citewell serve still running?");
    }
    if (session !== state.session) throw stale();
    if (!response.ok) {
      const error = await readError(response);
      if (response.status === 401 && state.me) signOut(`You were signed out: ${error.message}`);
      throw error;
    }
    if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) return response.json();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let draft = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (session !== state.session) { reader.cancel(); throw stale(); }
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const kind = (/^event: (.*)$/m.exec(block) || [])[1];
        const data = JSON.parse((/^data: (.*)$/m.exec(block) || [])[1] || "null");
        if (kind === "draft") {
          draft += data.text;
          showDraft(draft);
        } else if (kind === "retraction") {
          draft = "";
          showRetraction(data.reason);
        } else if (kind === "final") {
          return data;
        } else if (kind === "error") {
          throw new ApiError(0, (data.error && data.error.code) || "error", (data.error && data.error.message) || "the answer failed");
        }
      }
      if (done) throw new ApiError(0, "cut_off", "The answer stopped before it was finished; ask again.");
    }
  }

  /** A model's draft as written so far. Its refusal word (the server's, on the page's body) is
   *  the model saying the documents do not answer: said so in words, never shown as the draft. */
  function showDraft(text) {
    const word = document.body.dataset.refusalWord;
    const written = text.trim();
    const box = clear($("answer"));
    if (word && written && word.startsWith(written) && written !== word) {  // perhaps the refusal word, still arriving
      show(box, false);
      return;
    }
    append(box, [word && written.includes(word)
      ? el("div", { class: "draft", id: "draft" },
        el("p", { class: "draft-label", text: "The language model found no answer in your documents; looking for what came nearest…" }))
      : el("div", { class: "draft", id: "draft" },
        el("p", { class: "draft-label", text: "Draft, still being checked against your documents:" }),
        el("p", { class: "draft-text", id: "draft-text", text }))]);
    show(box, true);
  }

  function showRetraction(reason) {
    const box = clear($("answer"));
    append(box, [el("div", { class: "draft retracted", id: "retraction", role: "status" },
      el("p", { text: "The draft was withdrawn; checking again…" }),
      el("p", { class: "hint", text: plainNote(reason) || reason || "" }))]);
    show(box, true);
  }

  /* ---------- the conversation, its history, and feedback ---------- */

  /** What a turn was answered, as the thread holds it: the words alone, for a turn whose answer
   *  and sources could not be read. */
  function turnSummary(turn) {
    const text = (turn.answer || "").replace(/\s*\[S\d+\]/g, "").trim();
    if (turn.outcome === "not_found") return "Not answered: nothing you may read is about this.";
    if (turn.outcome === "unconfirmed") return text ? `Not confirmed. The closest passage: ${text}` : "Not confirmed.";
    return text;
  }

  /** A turn's question at the end of the thread; its answer follows it (earlierAnswer, or the
   *  answer box just below the thread for the latest). */
  function addTurn(turn) {
    const item = turnItem(turn);
    $("thread").append(item);
    return item;
  }

  function turnItem(turn) {
    const item = el("li", { class: "turn" }, el("span", { class: "turn-asked", text: turn.asked }));
    if (turn.question && turn.question !== turn.asked) {
      append(item, [el("span", { class: "turn-rewritten", text: `answered as: ${turn.question}` })]);
    }
    return item;
  }

  /** A turn of a page the server returned, as the thread shows it: without its words when its
   *  answer was withdrawn; with its answer unless that is left to the answer box below. */
  function shownTurn(turn, answer, answerBelow) {
    if (turn.withdrawn) return el("li", { class: "turn withdrawn", text: "(withdrawn: a document it rested on changed)" });
    const item = turnItem(turn);
    if (!answerBelow) item.append(earlierAnswer(turn, answer));
    return item;
  }

  /** An earlier turn's answer in the thread: its words with their markers, and its sources as
   *  chips that open each quote in its document. Ids are the answer's own: a thread holds many. */
  function earlierAnswer(turn, answer) {
    const box = el("div", { class: "turn-answer" });
    if (!answer) return append(box, [el("p", { class: "turn-text", text: turnSummary(turn) })]);
    const citations = answer.citations || [];
    const prefix = `cite-${answer.answer_id}`;
    if (answer.source_deleted) {
      return append(box, [el("p", { class: "turn-text muted", text: "This answer was withdrawn: a document it rested on has since been deleted or replaced." })]);
    }
    if (answer.outcome === "not_found") {
      append(box, [el("p", { class: "turn-text muted", text: "Not answered: nothing you may read is about this." })]);
    } else if (answer.outcome === "unconfirmed") {
      append(box, [el("p", { class: "turn-text muted", text: answer.answer ? "Not confirmed. The closest passage says:" : "Not confirmed." })]);
      if (answer.answer) append(box, [el("p", { class: "turn-text" }, withMarkers(answer.answer, citations, prefix))]);
    } else {
      append(box, [el("p", { class: "turn-text" }, withMarkers(answer.answer || "", citations, prefix))]);
    }
    const notes = [...new Set((answer.degraded || []).map(plainNote).filter(Boolean))];
    if (notes.length) append(box, [el("p", { class: "turn-note", text: notes.join(" ") })]);
    if (citations.length) append(box, [sourceChips(citations, prefix)]);
    return box;
  }

  function sourceChips(citations, prefix) {
    return el("ul", { class: "chips", "aria-label": citations.length === 1 ? "Source" : "Sources" }, citations.map((citation) => {
      if (citation.deleted) {
        return el("li", {}, el("span", { class: "chip gone" }, el("span", { class: "ref", text: citation.ref }), " deleted or replaced since"));
      }
      const where = [trail(citation), place(citation)].filter(Boolean).join(" · ");
      return el("li", {}, el("button", {
        type: "button", class: "chip", id: `${prefix}-${citation.ref}`, "data-ref": citation.ref, title: citation.quote,
        onclick: (event) => openSource(citation, citation.quote, event.currentTarget),
      }, el("span", { class: "ref", text: citation.ref }), ` ${citation.title || citation.document_id}${where ? ` · ${where}` : ""}`));
    }));
  }

  /** The answer in the box below the thread, moved into the thread as its last turn's answer. */
  function settleLatest() {
    const box = $("answer");
    const answer = state.answers.get(box.dataset.answerId || "");
    const last = $("thread").lastElementChild;
    if (answer && !box.hidden && last && !last.querySelector(".turn-answer") && !last.classList.contains("withdrawn")) {
      last.append(earlierAnswer({}, answer));
    }
    clear(box);
    delete box.dataset.answerId;
    show(box, false);
  }

  /** A turn's answer with its sources: as this page received it, else as it was recorded (GET
   *  /answers/{id}/citations); null when it cannot be read. Only a turn the server's thread shows
   *  (not withdrawn, still the caller's to read) is asked for. */
  async function answerOf(answerId) {
    if (!state.answers.has(answerId)) {
      try {
        state.answers.set(answerId, await api("GET", `/answers/${encodeURIComponent(answerId)}/citations`));
      } catch (error) {
        if (error.code === "stale") throw error;
        return null;
      }
    }
    return state.answers.get(answerId);
  }

  function newConversation() {
    follow(null);
    clear($("thread"));
    show($("thread"), false);
    clear($("answer"));
    show($("answer"), false);
    status("ask-status", "A new conversation: the next question stands on its own.");
    $("question").focus();
  }

  async function loadHistory() {
    if (!state.me) return;
    let found;
    try {
      found = await api("GET", "/conversations");
    } catch (error) {
      return;  // the history is a convenience: the answer above stands without it
    }
    const list = clear($("history"));
    for (const item of found.history) {
      const pick = el("button", { type: "button", class: "link", text: item.question });
      pick.addEventListener("click", () => openConversation(item.conversation_id));
      append(list, [el("li", {}, pick, el("span", { class: "hint", text: ` ${when(item.at)}` }))]);
    }
    if (!found.history.length) append(list, [el("li", { class: "hint", text: "No questions yet." })]);
  }

  /** The conversation as the server keeps it, its latest page of turns: a turn whose answer was
   *  withdrawn since (a document deleted, replaced or narrowed) is shown without its words, never
   *  from a copy the page held. Earlier turns come a page at a time from "Earlier turns" (the
   *  server pages a long conversation: a view never reads it whole). With ``latestBelow`` the
   *  latest turn's answer is left to the answer box. False when it could not be read. */
  async function loadThread(id, latestBelow = false) {
    let thread;
    let answers;
    try {
      thread = await api("GET", `/conversations/${encodeURIComponent(id)}`);
      const last = thread.turns.length - 1;
      answers = await Promise.all(thread.turns.map((turn, index) =>
        (turn.withdrawn || (latestBelow && index === last) ? null : answerOf(turn.answer_id))));
    } catch (error) {
      if (error.code === "stale") throw error;
      return false;
    }
    follow(thread.conversation_id);
    clear($("thread"));
    thread.turns.forEach((turn, index) => {
      $("thread").append(shownTurn(turn, answers[index], latestBelow && index === thread.turns.length - 1));
    });
    show($("thread"), thread.turns.length > 0);
    earlierFrom(thread);
    return true;
  }

  /** "Earlier turns" above the thread while a page has turns before it (``next``), with how many. */
  function earlierFrom(page) {
    const button = $("thread-earlier");
    state.earlier = page && page.next ? { id: page.conversation_id, cursor: page.next } : null;
    const before = page && page.turns.length ? page.turns[0].seq - 1 : 0;
    button.textContent = `Earlier turns (${before})`;
    show(button, Boolean(state.earlier));
  }

  /** The page of turns before the first one shown, put above it with each answer and its sources. */
  async function loadEarlier() {
    const kept = state.earlier;
    if (!kept || kept.id !== state.conversation) return;
    const button = $("thread-earlier");
    button.disabled = true;
    try {
      const page = await api("GET", `/conversations/${encodeURIComponent(kept.id)}?cursor=${encodeURIComponent(kept.cursor)}`);
      const answers = await Promise.all(page.turns.map((turn) => (turn.withdrawn ? null : answerOf(turn.answer_id))));
      if (state.earlier !== kept) return;  // another conversation, or this one reloaded, meanwhile
      $("thread").prepend(...page.turns.map((turn, index) => shownTurn(turn, answers[index], false)));
      earlierFrom(page);
      status("ask-status", `${page.turns.length} earlier ${page.turns.length === 1 ? "turn" : "turns"} shown above.`);
      if (!state.earlier) $("thread").focus();  // the button is gone: the thread keeps the focus
    } catch (error) {
      report("ask-status", error);
    } finally {
      button.disabled = false;
    }
  }

  /** The conversation a next question follows up, remembered for this tab and this token: a
   *  reload goes on with it instead of starting a new one without a word. */
  function follow(id) {
    if (id !== state.conversation) earlierFrom(null);  // another conversation's earlier turns are not this one's
    state.conversation = id;
    if (id && state.token) sessionStorage.setItem(CONVERSATION_KEY, JSON.stringify({ token: state.token, id }));
    else sessionStorage.removeItem(CONVERSATION_KEY);
  }

  /** After a sign-in with the token a conversation was remembered under (a reload), its thread. */
  async function resume() {
    let kept = null;
    try {
      kept = JSON.parse(sessionStorage.getItem(CONVERSATION_KEY) || "null");
    } catch (_) { /* not ours: forgotten below */ }
    if (!kept || kept.token !== state.token || typeof kept.id !== "string") {
      sessionStorage.removeItem(CONVERSATION_KEY);
      show($("ask-form"), true);
      return;
    }
    try {
      if (await loadThread(kept.id)) status("ask-status", "Your next question follows up this conversation.");
      else follow(null);
    } catch (_) { /* signed out or in again meanwhile: nothing to show */ }
    show($("ask-form"), true);  // held back (index.html) until the thread above it was drawn
    if (document.activeElement === document.body && !$("view-ask").hidden) $("question").focus();
  }

  async function openConversation(id) {
    try {
      clear($("answer"));  // the answer below was another question's: this thread shows its own
      show($("answer"), false);
      if (!(await loadThread(id))) throw new ApiError(0, "unreadable", "That conversation could not be read; ask again.");
      status("ask-status", "Your next question follows up this conversation.");
      $("question").focus();
    } catch (error) {
      report("ask-status", error);
    }
  }

  function feedbackControl(answerId) {
    const box = el("div", { class: "feedback", role: "group", "aria-label": "Was this answer helpful?" },
      el("span", { text: "Was this helpful?" }));
    const yes = el("button", { type: "button", id: "feedback-yes", "aria-pressed": "false", text: "Yes" });
    const no = el("button", { type: "button", id: "feedback-no", "aria-pressed": "false", text: "No" });
    const comment = el("input", { type: "text", id: "feedback-comment", maxlength: "2000", placeholder: "What was wrong? (optional)",
                                  "aria-label": "What was wrong with this answer" });
    const sendNo = el("button", { type: "button", id: "feedback-send", text: "Send" });
    const more = el("div", { class: "feedback-more" }, comment, sendNo);
    more.hidden = true;
    const said = el("span", { class: "hint", id: "feedback-status", role: "status" });
    // The vote is the feedback: "No" records it at once, and a comment sent after it replaces that
    // same record (a turn holds one feedback) with the vote and the comment. Posts go one after
    // another, so a comment sent while the vote is on its way is never overwritten by it.
    let sending = Promise.resolve(true);
    /** Resolves to whether it was recorded. */
    function give(helpful, text, thanks) {
      sending = sending.then(async () => {
        try {
          await api("POST", `/answers/${encodeURIComponent(answerId)}/feedback`, text ? { helpful, comment: text } : { helpful });
          yes.setAttribute("aria-pressed", String(helpful));
          no.setAttribute("aria-pressed", String(!helpful));
          said.textContent = thanks;
          return true;
        } catch (error) {
          said.textContent = error.message;
          return false;
        }
      });
      return sending;
    }
    const thanks = "Thank you: recorded with this answer.";
    function sendComment() {
      give(false, comment.value.trim(), thanks).then((recorded) => { if (recorded) more.hidden = true; });
    }
    yes.addEventListener("click", () => give(true, "", thanks).then((recorded) => { if (recorded) more.hidden = true; }));
    no.addEventListener("click", () => {
      const already = no.getAttribute("aria-pressed") === "true";  // voted No before: its comment stays until one is sent
      more.hidden = false;
      comment.focus();
      if (!already) give(false, "", "Noted as not helpful. What was wrong? Send adds it to this feedback.");
    });
    sendNo.addEventListener("click", sendComment);
    comment.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); sendComment(); } });
    append(box, [yes, no, more, said]);
    return box;
  }

  /** `narrowed`: asked with filters, so a refusal says they narrowed what was read. */
  function renderAnswer(answer, narrowed) {
    const box = clear($("answer"));
    box.dataset.answerId = answer.answer_id || "";
    append(box, [degradedBox(answer.degraded)]);
    if (answer.question) append(box, [el("p", { class: "rewritten", id: "rewritten", text: `Answered as: ${answer.question}` })]);

    if (answer.source_deleted) {
      append(box, [el("div", { class: "refusal withdrawn" },
        el("h2", { text: "This answer was withdrawn" }),
        el("p", { text: "A document it rested on has since been deleted or replaced, so its text is no longer shown. Ask again for an answer from the documents as they are now." }))]);
    } else if (answer.outcome === "clarify") {
      append(box, [renderClarify(answer)]);
    } else if (answer.outcome === "unconfirmed") {
      append(box, [renderUnconfirmed(answer)]);
    } else if (answer.refused) {
      append(box, [renderRefusal(answer, narrowed)]);
    } else {
      append(box, [el("h2", { class: "visually-hidden", text: "Answer" }),
        el("p", { class: "answer-text", id: "answer-text" }, withMarkers(answer.answer || "", answer.citations || []))]);
      append(box, [renderSources(answer.citations || [])]);
    }
    if (answer.answer_id && answer.conversation_id && !answer.source_deleted) append(box, [feedbackControl(answer.answer_id)]);
    if (answer.answer_id) append(box, [el("p", { class: "answer-id", text: `Answer id ${answer.answer_id}` })]);
    show(box, true);
  }

  /** The answer's text with each `[S1]` that names a real source as a link to that source. */
  function withMarkers(text, citations, prefix = "cite") {
    const refs = new Set(citations.filter((c) => !c.deleted).map((c) => c.ref));
    const nodes = [];
    let last = 0;
    for (const match of text.matchAll(/\[(S\d+)\]/g)) {
      nodes.push(text.slice(last, match.index));
      const ref = match[1];
      nodes.push(refs.has(ref)
        ? el("a", { href: `#${prefix}-${ref}`, class: "marker", "data-ref": ref, "aria-label": `source ${ref}`, onclick: jumpToSource }, ref)
        : match[0]);
      last = match.index + match[0].length;
    }
    nodes.push(text.slice(last));
    return nodes;
  }

  function jumpToSource(event) {
    event.preventDefault();  // the hash routes views; a marker only moves focus to its source
    const target = $(event.currentTarget.getAttribute("href").slice(1));
    if (!target) return;
    target.scrollIntoView({ block: "nearest", behavior: "smooth" });
    target.focus({ preventScroll: true });
    target.classList.remove("flash");
    void target.offsetWidth;
    target.classList.add("flash");
  }

  function renderSources(citations) {
    const list = el("ol", { class: "sources", id: "sources" });
    for (const citation of citations) {
      const item = el("li", { class: "source", id: `cite-${citation.ref}`, tabindex: "-1", "data-ref": citation.ref });
      if (citation.deleted) {
        append(item, [el("span", { class: "ref", text: citation.ref }),
          el("p", { class: "muted", text: "This source has been deleted or replaced by a newer revision since the answer was given." })]);
      } else {
        append(item, [
          el("div", { class: "source-head" },
            el("span", { class: "ref", text: citation.ref }),
            el("span", { class: "title", text: citation.title || citation.document_id })),
          meta(citation),
          el("blockquote", { class: "quote", text: citation.quote }),
          el("button", {
            type: "button", class: "open-source",
            "aria-label": `Open in document: source ${citation.ref}`,
            onclick: (event) => openSource(citation, citation.quote, event.currentTarget),
          }, "Open in document"),
        ]);
      }
      list.append(item);
    }
    return el("section", { class: "sources-box", "aria-labelledby": "sources-title" },
      el("h2", { id: "sources-title", text: citations.length === 1 ? "Source" : "Sources" }), list);
  }

  /** Section trail, page or sheet and row, and the document id when the title hides it. */
  function meta(item) {
    const bits = [trail(item), place(item)].filter(Boolean);
    return el("p", { class: "meta" },
      bits.length ? el("span", { class: "where", text: bits.join(" · ") }) : null,
      el("span", { class: "doc-id", text: item.document_id }));
  }

  /** Found nothing the caller may read about it: said as what was found, never as what exists. */
  function renderRefusal(answer, narrowed) {
    const box = el("div", { class: "refusal", id: "refusal" },
      el("h2", { text: narrowed ? "Nothing in the documents you narrowed to is about this."
                                : "Nothing in the documents you can read is about this." }),
      el("p", { text: "citewell gives no answer rather than guess." }));
    return append(box, closestPassages(answer.closest || [], "Nothing you may read came near it."));
  }

  /** The documents answer differently per condition, more of them than an answer lists: which one
   *  is meant. Each condition is a button that asks for it in this conversation ("for Germany"). */
  function renderClarify(answer) {
    const text = answer.answer || "";
    const asked = text.indexOf("?") + 1;  // "Which country do you mean?" heads what follows it
    const box = el("div", { class: "clarify", id: "clarify" },
      el("h2", { id: "clarify-question", text: asked ? text.slice(0, asked) : "Which one do you mean?" }),
      el("p", { class: "answer-text", id: "clarify-text" }, withMarkers(text.slice(asked).trim(), answer.citations || [])));
    const choices = el("ul", { class: "choices", id: "clarify-choices", "aria-label": "Ask for one of them" });
    for (const condition of answer.conditions || []) {
      if (!condition.condition) continue;
      choices.append(el("li", {}, el("button", {
        type: "button", class: "choice", text: condition.condition,
        onclick: () => { $("question").value = `for ${condition.condition}`; $("ask-form").requestSubmit(); },
      })));
    }
    return append(box, [choices, renderSources(answer.citations || [])]);
  }

  /** The passage that came nearest, quoted with its source, and labelled: it may not answer the question. */
  function renderUnconfirmed(answer) {
    const quoted = Boolean(answer.answer);
    const box = el("div", { class: "unconfirmed", id: "unconfirmed" },
      el("h2", { text: "Not confirmed" }),
      el("p", { text: quoted
        ? "citewell could not confirm that this answers your question. The closest passage it found says:"
        : "citewell found passages you can read but could not check them against your question." }));
    if (quoted) {
      append(box, [el("p", { class: "answer-text unconfirmed-text", id: "unconfirmed-text" },
        withMarkers(answer.answer, answer.citations || [])), renderSources(answer.citations || [])]);
    }
    return append(box, closestPassages(answer.closest || [], ""));
  }

  function closestPassages(closest, none) {
    if (!closest.length) return none ? [el("p", { class: "muted", text: none })] : [];
    return [
      el("h3", { text: "Closest passages" }),
      el("p", { class: "hint", text: "These came nearest to your question. They are passages to read, not an answer." }),
      el("ol", { class: "passages", id: "closest" }, closest.map(passage)),
    ];
  }

  function passage(item) {
    return el("li", { class: "passage" },
      el("div", { class: "source-head" }, el("span", { class: "title", text: item.title || item.document_id })),
      meta(item),
      el("p", { class: "snippet", text: snippet(item.text, item) }),
      el("button", {
        type: "button", class: "open-source", "aria-label": `Open in document: this passage of ${item.title || item.document_id}`,
        onclick: (event) => openSource(item, item.text, event.currentTarget),
      }, "Open in document"));
  }

  /* ---------- a source in its document ---------- */

  /** The document's current text (one section of it, when `section` is not null), or throws. */
  async function currentText(documentId, section) {
    const path = documentPath(documentId) + (section !== null ? `?section=${encodeURIComponent(section)}` : "");
    return allPages(path);
  }

  /** A long text comes a page at a time, every page of the revision the first one read; when the
   *  document is replaced between pages (409 stale_cursor) the read starts again, once. */
  async function allPages(path, again = true) {
    const first = await api("GET", path);
    const texts = [first.text || ""];
    let cursor = first.next;
    try {
      while (cursor) {
        const page = await api("GET", path + (path.includes("?") ? "&" : "?") + `cursor=${encodeURIComponent(cursor)}`);
        texts.push(page.text || "");
        cursor = page.next;
      }
    } catch (error) {
      if (again && error.code === "stale_cursor") return allPages(path, false);
      throw error;
    }
    return { ...first, text: texts.join(""), next: null };
  }

  async function openSource(item, quote, opener) {
    const dialog = $("source-dialog");
    const body = clear($("source-body"));
    $("source-title").textContent = item.title || item.document_id;
    dialog.returnFocusTo = opener;
    append(body, [el("p", { class: "status busy", role: "status", text: "Opening the document…" })]);
    if (!dialog.open) dialog.showModal();
    let section = item.section_id || null;  // the cited revision's section
    let result;
    let spans;
    try {
      try {
        result = await currentText(item.document_id, section);
      } catch (error) {
        // A section of a revision since replaced (404), or one longer than a read may be (400): the whole text.
        if (section === null || error.code === "stale" || (error.status !== 404 && error.status !== 400)) throw error;
        section = null;
        result = await currentText(item.document_id, null);
      }
      spans = locate(result.text || "", quote);
      if (!spans && quote && section !== null) {
        // Touching chunks of two sections are one passage: a quote may run on past its section.
        const whole = await currentText(item.document_id, null);
        const there = locate(whole.text || "", quote);
        if (there) [result, spans] = [whole, there];
      }
    } catch (error) {
      if (error.code === "stale") return;
      clear(body).append(el("p", { class: "error", role: "alert", text: error.status === 404
        ? "This document is gone, or you may no longer read it."
        : error.text }));
      return;
    }
    const doc = result.document;
    const text = result.text || "";
    clear(body);
    append(body, [meta({ ...item, document_id: doc.document_id })]);
    if (item.revision && doc.active_revision && item.revision !== doc.active_revision) {
      append(body, [el("p", { class: "degraded", role: "note",
        text: "This document has a newer revision than the one cited; the passage may have changed." })]);
    }
    if (!spans && quote) {
      append(body, [el("p", { class: "degraded", role: "note", text: "The quoted passage is not in the current text of this section." })]);
    }
    const textBox = el("div", { class: "section-text", id: "section-text", tabindex: "0", "aria-label": "Section text" });
    if (spans) {
      const pieces = [];
      let last = 0;
      spans.forEach(([start, end], number) => {
        pieces.push(text.slice(last, start),
          el("mark", { class: "quote-part", ...(number ? {} : { id: "quote-mark" }), text: text.slice(start, end) }));
        last = end;
      });
      pieces.push(text.slice(last));
      append(textBox, pieces);
    } else {
      textBox.textContent = text || "This section has no text.";
    }
    append(body, [textBox]);
    const mark = $("quote-mark");
    if (mark) mark.scrollIntoView({ block: "center" });
  }

  function closeSource() {
    $("source-dialog").close();
  }

  /* ---------- search ---------- */

  async function search(event) {
    event.preventDefault();
    const question = $("search-question").value.trim();
    if (!question) return;
    const k = Number($("search-k").value) || 10;
    const button = event.submitter || event.target.querySelector("button[type=submit]");
    button.disabled = true;
    status("search-status", "Searching…", "busy");
    try {
      const filters = filtersOf($("search-form"));
      const result = await api("POST", "/search", filters ? { question, k, filters } : { question, k });
      renderHits(result, Boolean(filters));
    } catch (error) {
      show($("search-results"), false);
      report("search-status", error);
    } finally {
      button.disabled = false;
    }
  }

  function lanes(hit) {
    const found = [];
    const ranks = hit.lanes || {};
    if (ranks.bm25 != null) found.push(el("span", { class: "lane", text: `words #${ranks.bm25}` }));
    if (ranks.vector != null) found.push(el("span", { class: "lane", text: `meaning #${ranks.vector}` }));
    if (hit.weak) found.push(el("span", { class: "lane weak", text: "weak: near in meaning only" }));
    return el("p", { class: "lanes" }, el("span", { class: "visually-hidden", text: "Found by: " }), found);
  }

  function renderHits(result, narrowed) {
    const hits = result.hits || [];
    const box = clear($("search-results"));
    status("search-status", hits.length ? `${hits.length} passage${hits.length === 1 ? "" : "s"}` : "");
    append(box, [degradedBox(result.degraded)]);
    if (!hits.length) {
      append(box, [el("p", { class: "empty", text: narrowed ? "Nothing you may read matches this within the filters under \u201cNarrow to\u201d."
                                                            : "Nothing you may read matches this." })]);
    } else {
      append(box, [el("ol", { class: "hits", id: "hits" }, hits.map((hit) => el("li", {
        class: hit.weak ? "hit weak" : "hit", "data-document-id": hit.document_id },
        el("div", { class: "source-head" },
          el("span", { class: "rank", text: String(hit.rank) }),
          el("span", { class: "title", text: hit.title || hit.document_id })),
        meta(hit),
        el("p", { class: "snippet", text: snippet(hit.text, hit) }),
        el("div", { class: "hit-foot" },
          lanes(hit),
          el("button", {
            type: "button", class: "open-source", "aria-label": `Open in document: this passage of ${hit.title || hit.document_id}`,
            onclick: (event) => openSource(hit, hit.text, event.currentTarget),
          }, "Open in document")))))]);
    }
    show(box, true);
  }

  /* ---------- documents ---------- */

  async function loadDocuments() {
    if (!state.me) return;
    try {
      const documents = [];
      let cursor = null;
      do {  // the list comes a page at a time; the next page is named by the last one's `next`
        const result = await api("GET", "/documents" + (cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""));
        documents.push(...(result.documents || []));
        cursor = result.next;
      } while (cursor);
      state.documents = documents;
      renderDocuments();
      const list = $("documents");
      list.dataset.loads = String(Number(list.dataset.loads || 0) + 1);  // how many lists it has shown: a hook for tests
    } catch (error) {
      report("documents-status", error);
    }
  }

  function stopRefresh() {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = null;
  }

  /**
   * The list, redrawn only when a document changed, with the focus where it was (the same
   * document's same control), so a keyboard user is not thrown back to the top every 2 s.
   * Messages (an error, "Deleted …") stay in their own line; the counts go in the summary.
   */
  function renderDocuments() {
    const me = state.me;
    show($("upload"), Boolean(me && me.can_write));
    if (me && me.can_write && !$("upload-role-list").childElementCount) renderRoleChoices();
    const list = $("documents");
    const documents = [...state.documents].sort((a, b) => (a.title || a.document_id).localeCompare(b.title || b.document_id));
    const drawn = JSON.stringify([documents, Boolean(me && me.can_write)]);
    if (state.drawn !== drawn) {
      const active = document.activeElement;
      const item = list.contains(active) ? active.closest("li.doc") : null;
      const focused = item && { id: item.dataset.documentId, control: active.classList.contains("delete") ? "button.delete" : null };
      clear(list);
      for (const doc of documents) list.append(documentItem(doc));
      state.drawn = drawn;
      if (focused) {
        const again = [...list.children].find((li) => li.dataset.documentId === focused.id);
        const target = again && (focused.control ? again.querySelector(focused.control) : again);
        if (target) target.focus();
        else list.focus();
      }
    }
    const counts = {};
    for (const doc of documents) counts[doc.status] = (counts[doc.status] || 0) + 1;
    const summary = Object.entries(counts).map(([name, count]) => `${count} ${name}`).join(", ");
    $("documents-summary").textContent = documents.length
      ? `${documents.length} document${documents.length === 1 ? "" : "s"} you may read (${summary})`
      : `No documents you may read${me && me.can_write ? " yet: upload some above" : ""}.`;
    stopRefresh();
    if (documents.some((d) => d.status === "processing" || d.status === "deleting")) {
      state.refreshTimer = setTimeout(loadDocuments, 2000);
    }
  }

  function documentItem(doc) {
    const title = doc.title || doc.document_id;
    const facts = [
      ["Revision", shortRevision(doc.active_revision)],
      ["Passages", String(doc.chunk_count ?? 0)],
      ["Readable by", (doc.allowed_roles || []).join(", ")],
      ["Updated", when(doc.updated_at)],
    ];
    const item = el("li", { class: "doc", "data-document-id": doc.document_id, "data-status": doc.status },
      el("div", { class: "doc-head" },
        el("span", { class: "title", text: title }),
        el("span", { class: `badge ${doc.status}`, text: doc.status })),
      title !== doc.document_id ? el("p", { class: "doc-id", text: doc.document_id }) : null,
      el("dl", { class: "facts" }, facts.map(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })])));
    if (doc.error) {
      const served = doc.active_revision ? " The previous revision is still served." : "";
      item.append(el("p", { class: "failure", role: "note" },
        el("strong", { text: doc.error.code }), `: ${doc.error.message}${served}`));
    }
    if (state.me && state.me.can_write && doc.status !== "deleting") {
      item.append(el("div", { class: "actions" }, el("button", {
        type: "button", class: "danger quiet delete", "aria-label": `Delete ${title}`,
        onclick: (event) => confirmDelete(doc, event.currentTarget),
      }, "Delete")));
    }
    return item;
  }

  function confirmDelete(doc, opener) {
    const dialog = $("confirm-dialog");
    const title = doc.title || doc.document_id;
    $("confirm-title").textContent = `Delete “${title}”?`;
    $("confirm-text").textContent = "It is removed from search, from answers and from every store, and answers that cited it are withdrawn. This cannot be undone.";
    dialog.returnValue = "";
    dialog.onclose = () => {
      dialog.onclose = null;
      const button = opener.isConnected ? opener
        : document.querySelector(`li.doc[data-document-id="${CSS.escape(doc.document_id)}"] button.delete`);
      if (button) button.focus();
      if (dialog.returnValue === "delete") removeDocument(doc);
    };
    dialog.showModal();
  }

  async function removeDocument(doc) {
    const title = doc.title || doc.document_id;
    status("documents-status", `Deleting ${title}…`, "busy");
    try {
      const result = await api("DELETE", documentPath(doc.document_id));
      const pending = result && result.pending && result.pending.length
        ? ` Some bytes are still pending removal (${result.pending.join(", ")}); the next audit finishes it.` : "";
      state.documents = state.documents.filter((d) => d.document_id !== doc.document_id);
      renderDocuments();
      status("documents-status", `Deleted ${title}.${pending}`, pending ? "warn" : "ok");
    } catch (error) {
      report("documents-status", error, `Could not delete ${title}: `);
    }
  }

  /* ---------- uploads ---------- */

  /** The roles a new document may be readable by: those the caller holds, none checked. A writer
   *  chooses for each upload, or an HR writer's salary sheet would be readable by all staff. */
  function renderRoleChoices() {
    const box = clear($("upload-role-list"));
    for (const role of readingRoles()) {
      const id = `role-${role.replace(/[^A-Za-z0-9_-]/g, "_")}`;
      box.append(el("label", { class: "check", for: id },
        el("input", { type: "checkbox", id, value: role }),
        el("span", { text: role })));
    }
  }

  function chosenRoles() {
    return [...document.querySelectorAll("#upload-role-list input:checked")].map((input) => input.value);
  }

  async function uploadAll(files) {
    const roles = chosenRoles();
    if (!roles.length) {
      status("documents-status", "Choose who may read the files first: tick at least one role under \u201cWho may read them\u201d. Nothing was uploaded.", "error");
      $("upload-role-list").querySelector("input")?.focus();
      return;
    }
    status("documents-status", "");  // an earlier refusal is no longer news
    const jobs = [...files].map((file) => ({ file, row: uploadRow(file) }));
    for (const job of jobs) $("upload-list").prepend(job.row.item);
    for (const job of jobs) {
      await uploadOne(job.file, roles, job.row);  // the bytes one file at a time; processing overlaps
    }
  }

  function uploadRow(file) {
    const progress = el("progress", { max: "100", value: "0", "aria-label": `Upload of ${file.name}` });
    const label = el("span", { class: "upload-state", text: "waiting" });
    const item = el("li", { class: "upload-item", "data-name": file.name, "data-state": "waiting" },
      el("div", { class: "upload-head" },
        el("span", { class: "title", text: file.name }),
        el("span", { class: "size", text: megabytes(file.size) })),
      progress, label);
    const set = (name, text, detail) => {
      item.dataset.state = name;
      label.textContent = text;
      label.className = `upload-state ${name}`;
      if (detail !== undefined) {
        item.querySelector(".upload-detail")?.remove();
        if (detail) item.append(detail);
      }
    };
    return { item, progress, set };
  }

  /** A document id from a file name: the characters an id may not hold become "-". */
  function idFor(name) {
    return name.replace(/[#\\\u0000-\u001f\u007f]/g, "-");
  }

  async function uploadOne(file, roles, row) {
    const session = state.session;
    const limit = state.me && state.me.max_bytes;
    if (!file.size) return failed(row, "empty", "the file is empty: nothing was sent");
    if (limit && file.size > limit) {
      return failed(row, "too_large", `the file is ${megabytes(file.size)}, over the limit of ${megabytes(limit)}: nothing was sent`);
    }
    let created;
    try {
      row.set("registering", "registering…");
      created = await api("POST", "/documents", { document_id: idFor(file.name), filename: file.name, allowed_roles: roles }, session);
    } catch (error) {
      return failed(row, error.code, error.message);
    }
    try {
      await sendForm(created.upload, file, (fraction) => {
        row.progress.value = Math.round(fraction * 100);
        row.set("uploading", `uploading ${Math.round(fraction * 100)}%`);
      });
    } catch (error) {
      return failed(row, error.code, error.message);
    }
    row.progress.value = 100;
    row.set("processing", "processing: reading, splitting and indexing…");
    refreshSoon();
    watch(created.document_id, row, session);  // not awaited: the next file's bytes go up while this one is processed
  }

  /** Follow an uploaded document until it is published or failed, on its upload row. */
  async function watch(documentId, row, session) {
    const started = Date.now();
    while (Date.now() - started < POLL_LIMIT_MS && session === state.session) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      let doc;
      try {
        doc = (await api("GET", documentPath(documentId), undefined, session)).document;
      } catch (error) {
        return failed(row, error.code, error.message);
      }
      if (doc.status === "published") {
        row.set("published", `published: ${doc.chunk_count} passage${doc.chunk_count === 1 ? "" : "s"}, revision ${shortRevision(doc.active_revision)}`, null);
        refreshSoon();
        return;
      }
      if (doc.status === "failed") {
        refreshSoon();
        return failed(row, doc.error ? doc.error.code : "failed", doc.error ? doc.error.message : "the document could not be used");
      }
    }
    row.set("processing", "still processing: the Documents list shows when it is done");
  }

  function failed(row, code, message) {
    row.progress.value = 0;
    row.set("failed", "failed", el("p", { class: "failure upload-detail", role: "alert" }, el("strong", { text: code || "failed" }), `: ${message}`));
  }

  /** The presigned-POST shape (the same on AWS): the form's fields, then the file last. */
  function sendForm(upload, file, onProgress) {
    return new Promise((resolve, reject) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(upload.fields || {})) form.append(name, value);
      form.append("file", file, file.name);
      const request = new XMLHttpRequest();  // fetch() reports no upload progress
      request.open("POST", new URL(upload.url, location.href).href);  // the signed form is the credential: no token
      request.upload.onprogress = (event) => { if (event.lengthComputable) onProgress(event.loaded / event.total); };
      request.onload = async () => {
        if (request.status >= 200 && request.status < 300) return resolve();
        reject(await readError(new Response(request.responseText, { status: request.status, statusText: request.statusText })));
      };
      request.onerror = () => reject(new ApiError(0, "unreachable", "the upload did not reach the server"));
      request.send(form);
    });
  }

  let refreshPending = null;
  function refreshSoon() {
    clearTimeout(refreshPending);
    refreshPending = setTimeout(loadDocuments, 150);
  }

  function wireDropzone() {
    const zone = $("dropzone");
    const input = $("files");
    input.addEventListener("change", () => {
      if (input.files.length) uploadAll(input.files).finally(() => { input.value = ""; });
    });
    for (const name of ["dragenter", "dragover"]) {
      zone.addEventListener(name, (event) => {
        event.preventDefault();
        zone.classList.add("over");
      });
    }
    for (const name of ["dragleave", "drop"]) {
      zone.addEventListener(name, (event) => {
        event.preventDefault();
        zone.classList.remove("over");
      });
    }
    zone.addEventListener("drop", (event) => {
      const files = event.dataTransfer && event.dataTransfer.files;
      if (files && files.length) uploadAll(files);
    });
    // A file dropped outside the zone must not make the browser navigate away to it.
    window.addEventListener("dragover", (event) => event.preventDefault());
    window.addEventListener("drop", (event) => event.preventDefault());
  }

  /* ---------- start ---------- */

  function start() {
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const token = $("token").value.trim();
      if (!token) {
        const node = $("signin-error");
        node.textContent = "Paste a token first.";
        show(node, true);
        $("token").focus();
        return;
      }
      signIn(token);
    });
    $("sign-out").addEventListener("click", () => signOut());
    $("ask-form").addEventListener("submit", ask);
    for (const form of [$("ask-form"), $("search-form")]) {
      for (const type of ["input", "change"]) form.addEventListener(type, () => markNarrowed(form));
    }
    $("new-conversation").addEventListener("click", newConversation);
    $("thread-earlier").addEventListener("click", loadEarlier);
    $("search-form").addEventListener("submit", search);
    $("documents-refresh").addEventListener("click", loadDocuments);
    $("source-close").addEventListener("click", closeSource);
    $("source-dialog").addEventListener("close", () => {
      const opener = $("source-dialog").returnFocusTo;
      if (opener && document.contains(opener)) opener.focus();
    });
    $("source-dialog").addEventListener("click", (event) => {
      if (event.target === event.currentTarget) closeSource();  // a click on the backdrop
    });
    window.addEventListener("hashchange", route);
    wireDropzone();
    wireDemoIdentities();
    $("oidc-sign-in").addEventListener("click", beginOidcSignIn);
    finishOidcSignIn().then((returned) => {
      if (returned) return;
      if (!state.oidc) loadSignInConfig();
      if (state.token) signIn(state.token).then((ok) => { if (!ok) { renderIdentity(); route(); } });  // refused: the page's guess undone
      else route();
    });
  }

  start();
})();
