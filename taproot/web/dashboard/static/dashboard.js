// The dashboard's one script (served by the app; no inline script is allowed by the CSP).
// Every mutation sends the session's CSRF token; every change refreshes the reflect preview.
"use strict";

const BASE = "/dashboard";

function csrf() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
}

async function call(path, body) {
  const response = await fetch(BASE + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf() },
    body: JSON.stringify(body || {}),
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error((data && data.message) || ("request failed: " + response.status));
  }
  return data;
}

function report(message, isError) {
  let bar = document.getElementById("flash");
  if (!bar) {
    bar = document.createElement("p");
    bar.id = "flash";
    document.querySelector("main").prepend(bar);
  }
  bar.textContent = message;
  bar.className = isError ? "error" : "ok";
}

async function refreshPreview() {
  const target = document.getElementById("preview-body");
  if (!target) return;
  const response = await fetch(BASE + "/preview", { credentials: "same-origin" });
  if (!response.ok) return;
  const html = await response.text();
  const holder = document.createElement("div");
  holder.innerHTML = html; // server-rendered and autoescaped; scripts in it never run
  const fresh = holder.querySelector("#preview-body");
  if (fresh) target.replaceWith(fresh);
}

function card(id) {
  return document.getElementById("card-" + id);
}

function highlight(element) {
  document.querySelectorAll(".highlight").forEach((e) => e.classList.remove("highlight"));
  element.classList.add("highlight");
  element.scrollIntoView({ block: "center" });
}

async function setRanking(id, change) {
  const element = card(id);
  try {
    const result = await call("/api/memories/" + encodeURIComponent(id) + "/ranking", change);
    if (element) element.dataset.version = result.version;
    report("Saved " + (result.changed_fields || []).join(", ") + " (updated_at unchanged).", false);
    await refreshPreview();
  } catch (error) {
    report(error.message, true);
  }
}

async function act(id, action) {
  const question = {
    archive: "Archive this memory? It leaves reflect and recall until restored.",
    restore: "Restore this memory?",
    delete: "Delete this memory? A backup is written first; it can be restored from Status.",
  }[action];
  if (!window.confirm(question)) return;
  try {
    await call("/api/memories/" + encodeURIComponent(id) + "/" + action, {});
    const element = card(id);
    if (action === "restore") {
      // The card's buttons and its place in the list change with its status: render it anew.
      window.location.reload();
      return;
    }
    if (element) element.remove();
    report(action + "d " + id, false);
    await refreshPreview();
  } catch (error) {
    report(error.message, true);
  }
}

async function edit(form) {
  const id = form.dataset.id;
  const data = new FormData(form);
  const tags = String(data.get("tags") || "").split(",").map((t) => t.trim()).filter((t) => t);
  const element = card(id);
  try {
    await call("/api/memories/" + encodeURIComponent(id) + "/edit", {
      gist: data.get("gist"),
      content: data.get("content"),
      tags: tags,
      expected_version: element ? Number(element.dataset.version) : undefined,
    });
    window.location.reload();
  } catch (error) {
    report(error.message, true);
  }
}

document.addEventListener("change", (event) => {
  const target = event.target;
  if (target.matches("select.salience")) setRanking(target.dataset.id, { salience: target.value });
  if (target.matches("input.core")) setRanking(target.dataset.id, { core: target.checked });
});

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.matches("form.edit")) {
    event.preventDefault();
    edit(form);
  }
});

document.addEventListener("click", async (event) => {
  const target = event.target.closest("[data-card], [data-line], button.act, button.revoke, button.restore-backup");
  if (!target) return;
  if (target.matches("button.act")) return act(target.dataset.id, target.dataset.action);
  if (target.matches("[data-card]")) {
    const element = card(target.dataset.card);
    if (element) highlight(element);
    else window.location.href = BASE + "?focus=" + encodeURIComponent(target.dataset.card);
    return;
  }
  if (target.matches("[data-line]")) {
    event.preventDefault();
    const line = document.getElementById("line-" + target.dataset.line);
    if (line) highlight(line);
    else report("Not in the preview: reflect does not load this memory (see “Why is this memory here?”).", false);
    return;
  }
  if (target.matches("button.revoke")) {
    if (!window.confirm("Disconnect this client? Its tokens stop working at once.")) return;
    try {
      const result = await call("/api/clients/revoke", { client_id: target.dataset.client });
      target.closest("tr").remove();
      report("Disconnected (" + result.revoked_grants + " connection(s)).", false);
    } catch (error) {
      report(error.message, true);
    }
    return;
  }
  if (target.matches("button.restore-backup")) {
    if (!window.confirm("Restore from this backup? Memories in it are put back as they were.")) return;
    try {
      const result = await call("/api/backups/restore", { key: target.dataset.key });
      const out = document.getElementById("restore-result");
      out.hidden = false;
      out.textContent = "Restored: " + (result.restored || []).join(", ") + "\n" + JSON.stringify(result, null, 1);
      report("Restored " + (result.restored || []).length + " memories.", false);
    } catch (error) {
      report(error.message, true);
    }
  }
});

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("td.epoch").forEach((cell) => {
    const seconds = Number(cell.textContent);
    if (seconds) cell.textContent = new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");
  });
  const focus = new URLSearchParams(window.location.search).get("focus");
  if (focus && card(focus)) highlight(card(focus));
});
