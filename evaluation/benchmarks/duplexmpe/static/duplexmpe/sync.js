/*
 * Duplex-MPE drill-down: the input channel (what the model heard) and the output channel (the
 * model) share one clock. While "play input and output together" is ticked, playing, pausing or
 * seeking either player does the same to the other, and clicking anything on the timeline plays
 * both from there.
 */
(function () {
  "use strict";

  function players() {
    var found = [];
    ["input.wav", "output.wav"].forEach(function (name) {
      var root = document.querySelector('[data-floorboard-player][data-name="' + name + '"]');
      var player = root && window.FloorboardPlayer && window.FloorboardPlayer.get(root);
      if (player) found.push(player);
    });
    return found;
  }

  function start() {
    var toggle = document.getElementById("duplexmpe-sync");
    var pair = players();
    if (!toggle || pair.length !== 2) return;
    var busy = false;

    function mirror(from, to, action) {
      if (!toggle.checked || busy) return;
      busy = true;
      try { action(from, to); } finally { busy = false; }
    }

    pair.forEach(function (player, index) {
      var other = pair[1 - index];
      player.on("play", function () { mirror(player, other, function (a, b) { b.seek(a.currentTime); b.play(); }); });
      player.on("pause", function () { mirror(player, other, function (a, b) { b.pause(); }); });
      player.on("seeked", function () {
        mirror(player, other, function (a, b) { if (Math.abs(b.currentTime - a.currentTime) > 0.05) b.seek(a.currentTime); });
      });
    });

    document.querySelectorAll(".timeline [data-seek]").forEach(function (span) {
      span.addEventListener("click", function () {
        if (!toggle.checked) return;
        var t = parseFloat(span.getAttribute("data-seek"));
        busy = true;
        try { pair.forEach(function (p) { p.seek(t); p.play(); }); } finally { busy = false; }
      });
    });
  }

  // After player.js has mounted every player (it does so on DOMContentLoaded).
  window.addEventListener("load", start);
})();
