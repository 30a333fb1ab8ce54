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

  // The live area shows the running turn: the drafts the server sends in
  // "live" events (its whole state each time) and, for DeltaWriter turns,
  // text streamed in "delta" events. It only ever changes by these events;
  // the history's re-renders leave it alone, so the answer grows steadily.
  var typingOn = !live.hidden;
  var drafts = liveText.textContent;
  var streamed = "";
  function paint() {
    var text = drafts + (drafts && streamed ? "\n\n" : "") + streamed;
    if (liveText.textContent !== text) { liveText.textContent = text; }
    typing.hidden = !(typingOn && !text);
    var hide = !(typingOn || text);
    if (live.hidden !== hide) { live.hidden = hide; }
    if (!hide) { bottom(); }
  }

  var es = new EventSource("/ui/chat/stream?conv=" + encodeURIComponent(conv));
  es.addEventListener("live", function (e) {
    var st;
    try { st = JSON.parse(e.data); } catch (err) { return; }
    typingOn = !!st.typing;
    drafts = (st.drafts || []).map(function (d) { return String(d.text); }).join("\n\n");
    if (!typingOn) { streamed = ""; }
    paint();
  });
  es.addEventListener("delta", function (e) { streamed += e.data; paint(); });
  es.addEventListener("reset", function () { streamed = ""; paint(); });
  es.addEventListener("history", function (e) {
    var pending = document.getElementById("pending");
    history.innerHTML = e.data;
    // Keep the message just sent until the history has it.
    if (pending) {
      var sent = pending.querySelector(".text").getAttribute("data-sent");
      var shown = [].some.call(history.querySelectorAll(".msg.user .text"), function (el) { return el.textContent === sent; });
      if (!shown) { history.appendChild(pending); }
    }
    bottom();
  });
  window.addEventListener("pagehide", function () { es.close(); });

  function send() {
    var text = input.value.trim();
    if (!text) { return; }
    var body = new URLSearchParams(new FormData(form));
    input.value = "";
    var old = document.getElementById("pending");
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
    history.appendChild(mine);
    bottom();
    fetch(form.action, { method: "POST", body: body, headers: { "X-CSRF-Token": csrf }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) { return r.text().then(function (msg) { t.textContent = text + "  (not sent: " + msg.trim() + ")"; }); }
      })
      .catch(function () { t.textContent = text + "  (not sent: the daemon did not answer)"; });
  }
  form.addEventListener("submit", function (e) { e.preventDefault(); send(); });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
  });
  bottom();
})();
