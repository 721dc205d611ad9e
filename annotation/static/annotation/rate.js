/*
 * The rater's item page: two players (static/js/player.js), label choice, submit, and a log of
 * what the rater did (playback, seeks, speed, label choices, tab visibility, time on task) sent
 * to the server every few seconds and when the tab is hidden, so a reopened link resumes with
 * the same label chosen and the players where they were.
 *
 * Keys: space play/pause the active player, left/right seek it 5 s, C moves to the next context
 * clip and R to the response, 1/2 choose a label, 0 or 3 "can't judge", Enter submit, B back to
 * the previous item of the batch (to change its answer), G opens or closes the guideline, N the
 * comment box, F flags the item.
 *
 * After a gold item the rater sees the expected answer and goes on with Enter; after
 * state.breakMinutes of work in a batch a reminder suggests a break (once per interval).
 */
(function () {
  "use strict";

  var state = JSON.parse(document.getElementById("rate-state").textContent);
  var form = document.getElementById("rate-form");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var submitButton = document.getElementById("rate-submit");
  var message = document.getElementById("rate-message");
  var page = Array.from(crypto.getRandomValues(new Uint8Array(8)), function (b) {
    return b.toString(16).padStart(2, "0");
  }).join("");
  var FLUSH_MS = 5000;

  var seq = 0;
  var queue = [];
  var activeMs = 0;
  var visibleSince = document.visibilityState === "visible" ? performance.now() : null;
  var chosen = state.draftLabel || null;
  var commentBox = document.getElementById("rate-comment");
  var flagBox = document.getElementById("rate-flag");
  var commentDetails = document.getElementById("comment-box");
  var guideline = document.getElementById("guideline");
  var feedback = document.getElementById("check-feedback");
  var awaitingContinue = null; // the next URL while the gold feedback is shown
  if (commentBox && state.comment) { commentBox.value = state.comment; commentDetails.open = true; }
  if (flagBox && state.flagged) { flagBox.checked = true; commentDetails.open = true; }
  var submitting = false;
  var finished = false;
  var players = {};
  var active = null;

  function log(kind, player, details) {
    details = details || {};
    queue.push({
      seq: seq++,
      kind: kind,
      player: player || "",
      t: Math.round(performance.now()),
      position: details.position === undefined ? null : Math.round(details.position * 1000) / 1000,
      value: details.value === undefined ? "" : String(details.value),
    });
  }

  function takeActiveMs() {
    if (visibleSince !== null) {
      var now = performance.now();
      activeMs += now - visibleSince;
      visibleSince = now;
    }
    var spent = Math.round(activeMs);
    activeMs -= spent;
    return spent;
  }

  function positions() {
    var result = {};
    Object.keys(players).forEach(function (name) {
      result[name] = Math.max(0, players[name].currentTime || 0);
    });
    return result;
  }

  function post(url, payload, keepalive) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      keepalive: !!keepalive,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(payload),
    });
  }

  function flush(keepalive) {
    if (finished || submitting) return;
    var events = queue.splice(0, queue.length);
    var spent = takeActiveMs();
    var payload = { page: page, events: events, active_ms: spent, positions: positions() };
    post(state.eventsUrl, payload, keepalive)
      .then(function (response) {
        if (!response.ok && response.status >= 500) throw new Error("HTTP " + response.status);
      })
      .catch(function () {
        // Kept for the next call; the server ignores an event it already has.
        queue = events.concat(queue);
        activeMs += spent;
      });
  }

  // --- players ---------------------------------------------------------------------------------

  function activeName() {
    return Object.keys(players).filter(function (name) { return players[name] === active; })[0];
  }

  function setActive(name) {
    if (!players[name]) return;
    active = players[name];
    document.querySelectorAll(".rate-part").forEach(function (part) {
      part.classList.toggle("active", part.getAttribute("data-part") === name);
    });
  }

  function mountPlayer(name) {
    var root = document.getElementById("player-" + name);
    if (!root || !window.FloorboardPlayer) return;
    var player = window.FloorboardPlayer.mount(root);
    players[name] = player;
    var restored = false;
    var resumeAt = (state.positions || {})[name];
    // A clip with a window starts there (where the judged part begins).
    var start = parseFloat(root.getAttribute("data-start") || "0") || 0;
    player.on("ready", function () {
      if (!restored && player.currentTime === 0 && (resumeAt > 0 || start > 0)) {
        restored = true;
        player.seek(resumeAt > 0 ? resumeAt : start);
      }
    });
    player.on("play", function () {
      setActive(name);
      log("play", name, { position: player.currentTime });
    });
    player.on("pause", function () { log("pause", name, { position: player.currentTime }); });
    player.on("seeked", function () { log("seek", name, { position: player.currentTime }); });
    player.on("ratechange", function () { log("rate", name, { value: player.rate }); });
    player.on("ended", function () {
      log("ended", name, { position: player.currentTime });
      var next = order[order.indexOf(name) + 1];
      if (next) setActive(next);
    });
    player.on("playedthrough", function () {
      log("played_through", name, { position: player.currentTime });
      refresh();
    });
    // A clicked control gives the focus back, so the page's keys keep working.
    root.addEventListener("click", function (event) {
      setActive(name);
      if (event.target.closest("button")) event.target.closest("button").blur();
    });
  }

  // --- label and submit -------------------------------------------------------------------------

  function mustPlay() {
    if (!state.requirePlay || !players.response || state.heardResponse) return false;
    return !players.response.playedThrough;
  }

  function refresh() {
    form.querySelectorAll(".label-choice").forEach(function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-value") === chosen));
    });
    submitButton.disabled = !chosen || mustPlay() || submitting;
    if (chosen && mustPlay()) message.textContent = "Play the response to the end to submit.";
    else if (message.getAttribute("data-kind") !== "error") message.textContent = "";
  }

  function choose(value) {
    if (finished || submitting) return;
    if (value !== chosen) log("choose", "", { value: value });
    chosen = value;
    message.removeAttribute("data-kind");
    refresh();
  }

  function labelFor(key) {
    var match = state.labels.filter(function (label) { return label.key === key; })[0];
    return match ? match.value : null;
  }

  function showError(text) {
    message.textContent = text;
    message.setAttribute("data-kind", "error");
  }

  function labelText(value) {
    var match = state.labels.filter(function (label) { return label.value === value; })[0];
    return match ? match.text : value;
  }

  // A gold item's answer is known: say whether the rater's matched, then go on with Enter.
  function showFeedback(result, next) {
    awaitingContinue = next;
    feedback.hidden = false;
    feedback.className = "check-feedback " + (result.correct ? "right" : "wrong");
    feedback.textContent = "";
    var head = document.createElement("strong");
    head.textContent = result.correct ? "Right: this was a check item with a known answer. " : "Not quite: this was a check item with a known answer. ";
    var body = document.createElement("span");
    body.textContent = "Expected “" + labelText(result.expected) + "”; you chose “" + labelText(result.given) + "”. ";
    var go = document.createElement("button");
    go.type = "button";
    go.id = "feedback-continue";
    go.textContent = "Continue (Enter)";
    go.addEventListener("click", function () { window.location.assign(next); });
    feedback.append(head, body, go);
    message.textContent = "Saved.";
    go.focus();
  }

  function submit() {
    if (awaitingContinue) { window.location.assign(awaitingContinue); return; }
    if (finished || submitting) return;
    if (!chosen) return showError("Choose a label first (1, 2, or 0 for can't judge).");
    if (mustPlay()) return showError("Play the response to the end to submit.");
    submitting = true;
    refresh();
    var events = queue.splice(0, queue.length);
    var payload = {
      label: chosen,
      guideline_version: state.guidelineVersion,
      page: page,
      events: events,
      active_ms: takeActiveMs(),
      comment: commentBox ? commentBox.value : "",
      flagged: flagBox ? flagBox.checked : false,
    };
    post(state.submitUrl, payload, false)
      .then(function (response) {
        return response.json().then(function (body) { return { status: response.status, body: body }; });
      })
      .then(function (result) {
        if (result.body.ok) {
          finished = true;
          var next = state.review ? state.nextUrl : (result.body.next || state.nextUrl);
          if (result.body.feedback) {
            showFeedback(result.body.feedback, next);
            return;
          }
          message.textContent = "Saved.";
          window.location.assign(next);
          return;
        }
        submitting = false;
        showError(result.body.error || "Not saved.");
        refresh();
        if (result.status === 410) setTimeout(function () { window.location.assign(state.nextUrl); }, 1500);
      })
      .catch(function () {
        submitting = false;
        queue = events.concat(queue);
        showError("Not saved: the connection failed. Press Enter to try again.");
        refresh();
      });
  }

  // --- keys, visibility, start -------------------------------------------------------------------

  function typing(node) {
    return node && (node.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(node.tagName));
  }

  window.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    var key = event.key;
    var handled = true;
    if (key === " ") { if (active) active.toggle(); }
    else if (key === "ArrowLeft") { if (active) active.seekBy(-5); }
    else if (key === "ArrowRight") { if (active) active.seekBy(5); }
    else if (key === "c" || key === "C") {
      // Each press moves to the next context clip, then round again.
      var contexts = order.filter(function (name) { return name !== "response"; });
      var at = contexts.indexOf(activeName());
      setActive(contexts[(at + 1) % contexts.length]);
    }
    else if (key === "r" || key === "R") setActive("response");
    else if (key === "1" || key === "2") choose(labelFor(key));
    else if (key === "0" || key === "3") choose(labelFor("0"));
    else if (key === "Enter") submit();
    else if ((key === "b" || key === "B") && state.backUrl) { flush(true); window.location.assign(state.backUrl); }
    else if ((key === "g" || key === "G") && guideline) guideline.open = !guideline.open;
    else if ((key === "n" || key === "N") && commentBox) { commentDetails.open = true; commentBox.focus(); }
    else if ((key === "f" || key === "F") && flagBox) { commentDetails.open = true; flagBox.checked = !flagBox.checked; }
    else handled = false;
    if (handled) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
  // A focused button would answer space on key-up with a click of its own.
  window.addEventListener("keyup", function (event) {
    if (event.key === " " && !typing(event.target)) event.preventDefault();
  }, true);

  form.querySelectorAll(".label-choice").forEach(function (button) {
    button.addEventListener("click", function () {
      choose(button.getAttribute("data-value"));
      button.blur();
    });
  });
  submitButton.addEventListener("click", function () { submit(); submitButton.blur(); });

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") {
      takeActiveMs();
      visibleSince = null;
      log("hide");
      flush(true);
    } else {
      visibleSince = performance.now();
      log("show");
    }
  });
  window.addEventListener("pagehide", function () { flush(true); });

  // --- break reminder ------------------------------------------------------------------------
  var reminder = document.getElementById("break-reminder");
  var breakMs = (state.breakMinutes || 0) * 60000;
  var dismissedKey = "floorboard:break:" + state.batchKey;
  function dismissedUpTo() {
    try { return parseInt(window.localStorage.getItem(dismissedKey) || "0", 10) || 0; } catch (e) { return 0; }
  }
  function checkBreak() {
    if (!reminder || !breakMs) return;
    var spent = (state.batchActiveMs || 0) + activeMs + (visibleSince !== null ? performance.now() - visibleSince : 0);
    var due = Math.floor(spent / breakMs);
    if (due >= 1 && due > dismissedUpTo()) {
      document.getElementById("break-minutes").textContent = String(Math.round(spent / 60000));
      reminder.hidden = false;
      reminder.setAttribute("data-due", String(due));
    }
  }
  if (reminder) {
    document.getElementById("break-dismiss").addEventListener("click", function () {
      try { window.localStorage.setItem(dismissedKey, reminder.getAttribute("data-due") || "0"); } catch (e) { /* private mode */ }
      reminder.hidden = true;
    });
    checkBreak();
    setInterval(checkBreak, 15000);
  }
  setInterval(function () { if (document.visibilityState === "visible") flush(false); }, FLUSH_MS);

  var order = [];
  document.querySelectorAll("[data-floorboard-player][data-name]").forEach(function (root) {
    order.push(root.getAttribute("data-name"));
    mountPlayer(root.getAttribute("data-name"));
  });
  setActive(order[0]);
  var resumed = !!(state.draftLabel || Object.keys(state.positions || {}).length);
  log(resumed ? "resume" : "show");
  refresh();

  window.floorboardRate = {
    checkBreak: checkBreak,
    players: players,
    get chosen() { return chosen; },
    get active() { return active; },
    flush: flush,
  };
})();
