/*
 * Submission and task pages.
 * - The status panel polls its fragment every 2 s until the status is final, then reloads the
 *   page once so the scores and the task table appear.
 * - Filter selects apply as soon as they change.
 * - Clicking a word on the task timeline plays that track from the word's start.
 */
(function () {
  "use strict";

  var POLL_MS = 2000;

  function pollProgress() {
    var panel = document.getElementById("submission-progress");
    if (!panel || panel.getAttribute("data-final") === "true") return;
    var url = panel.getAttribute("data-poll-url");
    var failures = 0;

    function tick() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.text();
        })
        .then(function (html) {
          failures = 0;
          var holder = document.createElement("div");
          holder.innerHTML = html.trim();
          var fresh = holder.firstElementChild;
          if (!fresh) throw new Error("empty fragment");
          panel.replaceWith(fresh);
          panel = fresh;
          if (fresh.getAttribute("data-final") === "true") window.location.reload();
          else setTimeout(tick, POLL_MS);
        })
        .catch(function () {
          failures += 1;
          setTimeout(tick, Math.min(30000, POLL_MS * Math.pow(2, failures)));
        });
    }
    setTimeout(tick, POLL_MS);
  }

  function autosubmitFilters() {
    document.querySelectorAll("form[data-autosubmit]").forEach(function (form) {
      form.addEventListener("change", function () { form.requestSubmit ? form.requestSubmit() : form.submit(); });
    });
  }

  function timelineSeeks() {
    document.querySelectorAll(".timeline .lane[data-player]").forEach(function (lane) {
      lane.addEventListener("click", function (event) {
        var word = event.target.closest("[data-seek]");
        if (!word || !window.FloorboardPlayer) return;
        var root = document.querySelector('[data-floorboard-player][data-name="' + lane.getAttribute("data-player") + '"]');
        var player = root && window.FloorboardPlayer.get(root);
        if (!player) return;
        player.seek(parseFloat(word.getAttribute("data-seek")));
        player.play();
      });
    });
  }

  function start() {
    pollProgress();
    autosubmitFilters();
    timelineSeeks();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
