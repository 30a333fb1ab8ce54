// Switchboard web console: live updates over Server-Sent Events and the chat.
// No inline script anywhere (the CSP forbids it); every text from the server
// that is not server-rendered HTML is shown with textContent.
(function () {
  "use strict";
  var csrf = document.body.getAttribute("data-csrf") || "";

  // Elements with data-sse get their innerHTML replaced by each event named
  // data-sse-event (HTML rendered and escaped by the server's templates).
  document.querySelectorAll("[data-sse]").forEach(function (el) {
    var es = new EventSource(el.getAttribute("data-sse"));
    es.addEventListener(el.getAttribute("data-sse-event"), function (e) { el.innerHTML = e.data; });
    window.addEventListener("pagehide", function () { es.close(); });
  });

  // The menu (issue 34): on a narrow screen the stylesheet hides the
  // navigation of a "collapsible" header until its button opens it. Without
  // this script the button stays hidden and the links are always shown.
  var toggle = document.getElementById("menu-toggle");
  var header = toggle && toggle.closest("header");
  if (toggle && header) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var open = header.classList.toggle("open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  // Badges in the navigation: what waits for the operator (approvals,
  // pairing codes), kept current by the attention stream. Counts are numbers
  // set with textContent.
  var menu = document.querySelector("nav[data-attention]");
  if (menu) {
    var att = new EventSource(menu.getAttribute("data-attention"));
    att.addEventListener("attention", function (e) {
      var n;
      try { n = JSON.parse(e.data); } catch (err) { return; }
      n.total = (Number(n.pairing) || 0) + (Number(n.approvals) || 0);
      document.querySelectorAll("[data-attention-count]").forEach(function (b) {
        var v = Number(n[b.getAttribute("data-attention-count")]) || 0;
        b.textContent = String(v);
        b.hidden = v === 0;
      });
    });
    window.addEventListener("pagehide", function () { att.close(); });
  }

  var chat = document.getElementById("chat");
  if (!chat) { return; }
  var conv = chat.getAttribute("data-conv");
  var history = document.getElementById("chat-history");
  var live = document.getElementById("live");
  var liveText = document.getElementById("live-answer");
  var typing = document.getElementById("typing");
  var form = document.getElementById("chat-form");
  var input = document.getElementById("chat-input");

  function bottom() { window.scrollTo(0, document.body.scrollHeight); }

  // The live area shows the running turn as the server renders it: the
  // drafts as sanitized Markdown (the page's own sanitizer, chatstream.go)
  // and the approval card, in each "live" event's html. It goes in through a
  // <template> element, whose content runs no script; no HTML is ever built
  // here from model text. The history's re-renders leave the area alone, so
  // the answer grows steadily.
  var typingOn = !live.hidden && !typing.hidden;
  var shownHTML = null;
  function paint(html) {
    var changed = false;
    if (html !== shownHTML) {
      var tpl = document.createElement("template");
      tpl.innerHTML = html;
      liveText.replaceChildren(tpl.content);
      changed = shownHTML !== null || !live.hidden;
      shownHTML = html;
    }
    var empty = liveText.childNodes.length === 0;
    typing.hidden = !(typingOn && empty);
    var hide = !(typingOn || !empty);
    if (live.hidden !== hide) { live.hidden = hide; changed = true; }
    // Scroll only when something changed: a card's buttons stay put.
    if (!hide && changed) { bottom(); }
  }

  var es = new EventSource("/ui/chat/stream?conv=" + encodeURIComponent(conv));
  es.addEventListener("live", function (e) {
    var st;
    try { st = JSON.parse(e.data); } catch (err) { return; }
    typingOn = !!st.typing;
    paint(String(st.html || ""));
  });
  es.addEventListener("history", function (e) {
    var pending = document.getElementById("pending");
    history.innerHTML = e.data;
    // Keep the message just sent until the history has it.
    if (pending) {
      var sent = pending.querySelector(".text").getAttribute("data-sent");
      var shown = [].some.call(history.querySelectorAll(".msg.user .text"), function (el) { return el.textContent === sent; });
      if (!shown) { placeholderGone(); history.appendChild(pending); }
    }
    bottom();
  });
  window.addEventListener("pagehide", function () { es.close(); });

  // "No messages yet." goes as soon as there is one.
  function placeholderGone() {
    var empty = document.getElementById("chat-empty");
    if (empty) { empty.remove(); }
  }

  // The approval card's buttons post like the form would (CSRF header) and
  // show the outcome as text; the card goes when the chat's answer arrives.
  chat.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.classList || !f.classList.contains("approval-form")) { return; }
    e.preventDefault();
    var card = f.closest(".approval-card");
    var status = card && card.querySelector(".approval-status");
    card.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    fetch(f.action, { method: "POST", body: new URLSearchParams(new FormData(f)), headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" })
      .then(function (r) {
        if (r.ok) { if (status) { status.textContent = "Sent."; } return; }
        return r.text().then(function (msg) {
          if (status) { status.textContent = msg.trim(); }
          card.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        });
      })
      .catch(function () {
        if (status) { status.textContent = "Not decided: the daemon did not answer."; }
        card.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      });
  });

  function send() {
    var text = input.value.trim();
    if (!text) { return; }
    var body = new URLSearchParams(new FormData(form));
    input.value = "";
    var old = document.getElementById("pending");
    // (The sender is "you" here as in the history the server renders.)
    if (old) { old.remove(); }
    var mine = document.createElement("div");
    mine.className = "msg user pending";
    mine.id = "pending";
    var who = document.createElement("div");
    who.className = "who";
    who.textContent = "you";
    var t = document.createElement("div");
    t.className = "text";
    t.textContent = text;
    t.setAttribute("data-sent", text);
    mine.appendChild(who);
    mine.appendChild(t);
    placeholderGone();
    history.appendChild(mine);
    bottom();
    fetch(form.action, { method: "POST", body: body, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) { return r.text().then(function (msg) { t.textContent = text + "  (not sent: " + msg.trim() + ")"; }); }
      })
      .catch(function () { t.textContent = text + "  (not sent: the daemon did not answer)"; });
  }
  form.addEventListener("submit", function (e) { e.preventDefault(); send(); });

  // Uploads: the file goes to the chat like a platform's attachment. Its
  // size is checked here first (media.max_upload; the server checks again),
  // and every outcome is shown as text.
  var upForm = document.getElementById("upload-form");
  var upFile = document.getElementById("upload-file");
  var upStatus = document.getElementById("upload-status");
  function mib(n) { return n % 1048576 === 0 ? (n / 1048576) + " MiB" : n >= 1048576 ? (n / 1048576).toFixed(1) + " MiB" : n >= 1024 ? Math.floor(n / 1024) + " KiB" : n + " bytes"; }
  if (upForm && upFile && upStatus) {
    upForm.addEventListener("submit", function (e) {
      e.preventDefault();
      var file = upFile.files && upFile.files[0];
      if (!file) { upStatus.textContent = "Choose a file first."; return; }
      var max = Number(upForm.getAttribute("data-max")) || 0;
      if (max > 0 && file.size > max) {
        upStatus.textContent = "Not sent: the file is larger than " + mib(max) + ", the most the console takes (media.max_upload).";
        return;
      }
      upStatus.textContent = "Sending " + file.name + "…";
      fetch(upForm.action, { method: "POST", body: new FormData(upForm), headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" })
        .then(function (r) {
          if (r.ok) { upStatus.textContent = "Sent " + file.name + "."; upForm.reset(); return; }
          return r.text().then(function (msg) { upStatus.textContent = "Not sent: " + msg.trim(); });
        })
        .catch(function () { upStatus.textContent = "Not sent: the daemon did not answer."; });
    });
  }
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
  });
  bottom();
})();
