/*
 * Floorboard audio player: waveform, click or drag to seek, play/pause, speed, time.
 * No dependencies, no build step.
 *
 * Markup (leaderboard/fragments/player.html renders it):
 *   <div data-floorboard-player data-peaks="/audio/<token>/peaks/" data-label="Agent response"
 *        data-markers='[{"time": 12.4, "label": "input ends"}]'>
 *     <audio controls preload="metadata" src="/audio/<token>/"></audio>
 *   </div>
 * Every [data-floorboard-player] is mounted when the page loads; element.floorboardPlayer is
 * its player. Without JavaScript the browser's own <audio> controls remain.
 *
 * API
 *   FloorboardPlayer.mount(element, options?) -> player   (options: src, peaks, label, markers)
 *   FloorboardPlayer.get(element) -> player or undefined
 *   FloorboardPlayer.bindKeys(player, {target = document, step = 5}) -> unbind()
 *       space plays/pauses, left/right arrows seek by `step` seconds (ignored while typing).
 *   player.play() -> Promise    player.pause()    player.toggle()
 *   player.seek(seconds)        player.seekBy(deltaSeconds)
 *   player.setRate(rate)        one of FloorboardPlayer.RATES: 0.5 0.75 1 1.25 1.5 2
 *   player.currentTime, player.duration, player.rate, player.paused   (read-only)
 *   player.playedThrough        true once every part of the clip has been heard in playback
 *                               (seeking past a part does not count; gaps up to 0.25 s or 1 %)
 *   player.heardSeconds         how much of the clip has been heard
 *   player.audio                the underlying HTMLAudioElement
 *   player.on(event, fn) / player.off(event, fn), or assign player.onplay = fn, etc.
 *       events: "ready" (once, when the duration is first known), "play", "pause", "ended", "timeupdate", "seeked",
 *       "ratechange", "playedthrough" (once); handlers get the player as argument.
 *   player.destroy()
 *
 * Keyboard: every control is a focusable button or select; the waveform is a slider
 * (arrows seek 1 s, shift+arrows 5 s, Home/End).
 *
 * One track at a time: starting a player pauses every other one on the page, unless
 * FloorboardPlayer.setTogether(true) (a "play together" checkbox, #play-together, sets it), when
 * they play, pause and seek in sync.
 *
 * Expiring URLs: with data-renew (a URL answering {"url", "peaks", "renew", "expires_in"}) and
 * data-expires (seconds), a player whose URL has expired, or whose audio fails to load, asks for
 * a fresh one and carries on where it was: a page can stay open for hours.
 */
(function () {
  "use strict";

  var RATES = [0.5, 0.75, 1, 1.25, 1.5, 2];
  var PLAYERS = [];
  var together = false;
  var syncing = false;

  function others(player) {
    return PLAYERS.filter(function (other) { return other !== player; });
  }

  function root_emit(player, name) {
    player.root.dispatchEvent(new CustomEvent("floorboard:" + name, { detail: player }));
  }
  var EVENTS = ["ready", "play", "pause", "ended", "timeupdate", "seeked", "ratechange", "playedthrough"];
  var BUCKETS = 1000;

  function formatTime(seconds) {
    if (!isFinite(seconds) || seconds < 0) seconds = 0;
    var minutes = Math.floor(seconds / 60);
    var rest = seconds - minutes * 60;
    var text = rest.toFixed(1);
    if (rest < 10) text = "0" + text;
    return minutes + ":" + text;
  }

  function element(tag, attributes, text) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      node.setAttribute(name, attributes[name]);
    });
    if (text) node.textContent = text;
    return node;
  }

  function Player(root, options) {
    options = options || {};
    var self = this;
    this.root = root;
    this.audio = root.querySelector("audio") || element("audio", { preload: "metadata" });
    if (options.src) this.audio.src = options.src;
    if (!this.audio.parentNode) root.appendChild(this.audio);
    this.audio.controls = false;
    this.audio.preload = this.audio.preload || "metadata";
    this.label = options.label || root.getAttribute("data-label") || "";
    this.peaksUrl = options.peaks || root.getAttribute("data-peaks") || "";
    this.markers = options.markers || JSON.parse(root.getAttribute("data-markers") || "[]");
    this.peaks = null;
    this.renewUrl = options.renew || root.getAttribute("data-renew") || "";
    var expires = parseFloat(root.getAttribute("data-expires") || "0");
    // Renewed a little before the server's limit, so a request never lands just past it.
    this.expiresAt = expires > 0 ? Date.now() + expires * 900 : Infinity;
    this._renewing = null;
    this._renewFailures = 0;
    this.playedThrough = false;
    this._handlers = {};
    this._heard = []; // merged [start, end] stretches heard in playback
    this._last = null; // position at the last time update, while playing without a seek
    this._dragging = null;
    this._build();
    this._listen();
    if (this.peaksUrl) this._loadPeaks();
    this._draw();
    root.floorboardPlayer = this;
    root.classList.add("fb-mounted");
    PLAYERS.push(this);
    if (this.audio.readyState >= 1) setTimeout(function () { self._ready(); }, 0);
  }

  Player.prototype = {
    get currentTime() { return this.audio.currentTime || 0; },
    get duration() {
      var d = this.audio.duration;
      if (isFinite(d) && d > 0) return d;
      return this.peaks ? this.peaks.duration : 0;
    },
    get rate() { return this.audio.playbackRate; },
    get paused() { return this.audio.paused; },
    get heardSeconds() {
      return this._heard.reduce(function (sum, s) { return sum + (s[1] - s[0]); }, 0);
    },

    play: function () {
      var self = this;
      this._wantPlay = true;
      return this.fresh().then(function () {
        var result = self.audio.play();
        return result && result.catch ? result : Promise.resolve();
      });
    },
    // Fresh URLs when these have expired (or force): resolves once the audio may be played.
    fresh: function (force) {
      var self = this;
      if (!this.renewUrl || (!force && Date.now() < this.expiresAt)) return Promise.resolve();
      if (this._renewing) return this._renewing;
      var at = this.audio.currentTime || 0;
      var rate = this.audio.playbackRate;
      this._renewing = fetch(this.renewUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (fresh) {
          self.renewUrl = fresh.renew || self.renewUrl;
          self.peaksUrl = fresh.peaks || self.peaksUrl;
          self.expiresAt = Date.now() + (fresh.expires_in || 300) * 900;
          self.status.textContent = "";
          return new Promise(function (resolve) {
            var restore = function () {
              self.audio.removeEventListener("loadedmetadata", restore);
              if (at > 0) self.audio.currentTime = at;
              self.audio.playbackRate = rate;
              resolve();
            };
            self.audio.addEventListener("loadedmetadata", restore);
            self.audio.src = fresh.url;
            self.audio.load();
            self.renewals = (self.renewals || 0) + 1;
            root_emit(self, "renewed");
          });
        })
        .catch(function () {
          self.status.textContent = "This audio could not be loaded: its link has expired and could not be renewed (reload the page).";
        })
        .then(function () { self._renewing = null; });
      return this._renewing;
    },
    pause: function () { this.audio.pause(); },
    toggle: function () { return this.audio.paused ? this.play() : this.pause(); },
    seek: function (seconds) {
      var duration = this.duration;
      var target = Math.max(0, duration ? Math.min(seconds, duration) : seconds);
      this._last = null;
      this.audio.currentTime = target;
      this._draw(target);
    },
    seekBy: function (delta) { this.seek(this.currentTime + delta); },
    setRate: function (rate) {
      rate = Number(rate);
      if (RATES.indexOf(rate) < 0) throw new RangeError("rate must be one of " + RATES.join(", "));
      this.audio.playbackRate = rate;
      this.audio.defaultPlaybackRate = rate;
      this.rateSelect.value = String(rate);
    },
    on: function (name, fn) {
      (this._handlers[name] = this._handlers[name] || []).push(fn);
      return this;
    },
    off: function (name, fn) {
      this._handlers[name] = (this._handlers[name] || []).filter(function (f) { return f !== fn; });
      return this;
    },
    destroy: function () {
      var self = this;
      PLAYERS = PLAYERS.filter(function (player) { return player !== self; });
      this.audio.pause();
      if (this._resize) this._resize.disconnect();
      this.ui.remove();
      this.audio.controls = true;
      this.root.classList.remove("fb-mounted");
      delete this.root.floorboardPlayer;
    },

    _ready: function () {
      if (this._readyFired || !(this.duration > 0)) return;
      this._readyFired = true;
      this._emit("ready");
    },

    _emit: function (name) {
      var self = this;
      var own = this["on" + name];
      if (typeof own === "function") own.call(this, this);
      (this._handlers[name] || []).forEach(function (fn) { fn.call(self, self); });
    },

    _build: function () {
      var self = this;
      var ui = element("div", { class: "fb-ui" });
      var head = element("div", { class: "fb-head" });
      this.playButton = element("button", { type: "button", class: "fb-play", "aria-label": "Play" });
      this.playButton.innerHTML = '<span class="fb-icon" aria-hidden="true"></span>';
      var back = element("button", { type: "button", class: "fb-skip", "aria-label": "Back 5 seconds" }, "−5 s");
      var forward = element("button", { type: "button", class: "fb-skip", "aria-label": "Forward 5 seconds" }, "+5 s");
      this.timeText = element("span", { class: "fb-time", "aria-live": "off" }, "0:00.0 / 0:00.0");
      var rateLabel = element("label", { class: "fb-rate" }, "Speed ");
      this.rateSelect = element("select", { "aria-label": "Playback speed" });
      RATES.forEach(function (rate) {
        var option = element("option", { value: String(rate) }, rate + "×");
        if (rate === 1) option.selected = true;
        self.rateSelect.appendChild(option);
      });
      rateLabel.appendChild(this.rateSelect);
      var title = element("span", { class: "fb-label" }, this.label);
      head.append(this.playButton, back, forward, this.timeText, rateLabel, title);

      this.wave = element("div", {
        class: "fb-wave",
        tabindex: "0",
        role: "slider",
        "aria-label": "Seek" + (this.label ? " in " + this.label : ""),
        "aria-valuemin": "0",
        "aria-valuenow": "0",
      });
      this.canvas = element("canvas", { "aria-hidden": "true" });
      this.status = element("span", { class: "fb-status" });
      this.wave.append(this.canvas, this.status);
      ui.append(head, this.wave);
      this.root.insertBefore(ui, this.audio);
      this.ui = ui;

      this.playButton.addEventListener("click", function () { self.toggle(); });
      back.addEventListener("click", function () { self.seekBy(-5); });
      forward.addEventListener("click", function () { self.seekBy(5); });
      this.rateSelect.addEventListener("change", function () { self.setRate(self.rateSelect.value); });
      this.wave.addEventListener("keydown", function (event) { self._onKey(event); });
      this.wave.addEventListener("pointerdown", function (event) { self._onPointer(event, "down"); });
      this.wave.addEventListener("pointermove", function (event) { self._onPointer(event, "move"); });
      this.wave.addEventListener("pointerup", function (event) { self._onPointer(event, "up"); });
      this.wave.addEventListener("pointercancel", function () { self._dragging = null; self._draw(); });
      if (window.ResizeObserver) {
        this._resize = new ResizeObserver(function () { self._draw(); });
        this._resize.observe(this.wave);
      }
    },

    _listen: function () {
      var self = this;
      var audio = this.audio;
      audio.addEventListener("loadedmetadata", function () { self._draw(); self._ready(); });
      audio.addEventListener("play", function () {
        self._last = audio.currentTime;
        self._syncButton();
        others(self).forEach(function (other) {
          if (together) {
            if (Math.abs(other.currentTime - audio.currentTime) > 0.05) other.seek(audio.currentTime);
            if (other.paused) other.play();
          } else if (!other.paused) {
            other.pause();
          }
        });
        self._emit("play");
      });
      audio.addEventListener("pause", function () {
        self._hear(audio.currentTime);
        self._last = null;
        self._syncButton();
        if (together && !syncing) {
          syncing = true;
          others(self).forEach(function (other) { if (!other.paused) other.pause(); });
          syncing = false;
        }
        self._emit("pause");
      });
      audio.addEventListener("seeking", function () { self._last = null; });
      audio.addEventListener("seeked", function () {
        self._last = audio.paused ? null : audio.currentTime;
        self._draw();
        if (together && !syncing) {
          syncing = true;
          others(self).forEach(function (other) {
            if (Math.abs(other.currentTime - audio.currentTime) > 0.05) other.seek(audio.currentTime);
          });
          syncing = false;
        }
        self._emit("seeked");
      });
      audio.addEventListener("timeupdate", function () {
        self._hear(audio.currentTime);
        self._draw();
        self._emit("timeupdate");
      });
      audio.addEventListener("ended", function () {
        self._hear(self.duration);
        self._last = null;
        self._syncButton();
        self._draw();
        self._emit("ended");
      });
      audio.addEventListener("ratechange", function () {
        self.rateSelect.value = String(audio.playbackRate);
        self._emit("ratechange");
      });
      audio.addEventListener("error", function () {
        // An expired link (403) looks like any failed load: ask for a fresh one, a few times.
        if (self.renewUrl && self._renewFailures < 3) {
          self._renewFailures += 1;
          var wasPlaying = self._wantPlay;
          self.fresh(true).then(function () { if (wasPlaying) self.play(); });
          return;
        }
        self.status.textContent = "This audio could not be loaded (reload the page).";
      });
      audio.addEventListener("playing", function () { self._renewFailures = 0; self._wantPlay = false; });
    },

    // Count [last, now] as heard when it is a plain stretch of playback (no seek in between).
    _hear: function (now) {
      var last = this._last;
      if (last !== null && now >= last && now - last <= 1.5 * this.audio.playbackRate + 0.5) {
        this._addHeard(last, now);
      }
      this._last = this.audio.paused ? null : now;
      var duration = this.duration;
      if (!this.playedThrough && duration > 0) {
        var missing = duration - this.heardSeconds;
        if (missing <= Math.max(0.25, 0.01 * duration)) {
          this.playedThrough = true;
          this.root.classList.add("fb-played-through");
          this._emit("playedthrough");
        }
      }
    },

    _addHeard: function (start, end) {
      if (end <= start) return;
      var merged = [];
      var added = [start, end];
      this._heard.forEach(function (stretch) {
        if (stretch[1] < added[0] || stretch[0] > added[1]) merged.push(stretch);
        else added = [Math.min(added[0], stretch[0]), Math.max(added[1], stretch[1])];
      });
      merged.push(added);
      merged.sort(function (a, b) { return a[0] - b[0]; });
      this._heard = merged;
    },

    _syncButton: function () {
      var playing = !this.audio.paused;
      this.playButton.setAttribute("aria-label", playing ? "Pause" : "Play");
      this.playButton.classList.toggle("fb-playing", playing);
    },

    _onKey: function (event) {
      var step = event.shiftKey ? 5 : 1;
      var handled = true;
      if (event.key === "ArrowLeft" || event.key === "ArrowDown") this.seekBy(-step);
      else if (event.key === "ArrowRight" || event.key === "ArrowUp") this.seekBy(step);
      else if (event.key === "Home") this.seek(0);
      else if (event.key === "End") this.seek(this.duration);
      else if (event.key === " " || event.key === "Enter") this.toggle();
      else handled = false;
      if (handled) {
        event.preventDefault();
        event.stopPropagation();
      }
    },

    _fraction: function (event) {
      var box = this.canvas.getBoundingClientRect();
      return Math.min(1, Math.max(0, (event.clientX - box.left) / (box.width || 1)));
    },

    _onPointer: function (event, phase) {
      if (phase === "down") {
        if (event.button !== 0) return;
        this.wave.setPointerCapture(event.pointerId);
        this._dragging = this._fraction(event);
        this._draw();
      } else if (phase === "move" && this._dragging !== null) {
        this._dragging = this._fraction(event);
        this._draw();
      } else if (phase === "up" && this._dragging !== null) {
        var fraction = this._fraction(event);
        this._dragging = null;
        this.seek(fraction * this.duration);
      }
    },

    _loadPeaks: function () {
      var self = this;
      var url = this.peaksUrl + (this.peaksUrl.indexOf("?") < 0 ? "?" : "&") + "buckets=" + BUCKETS;
      fetch(url, { credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (peaks) {
          self.peaks = peaks;
          self._draw();
          self._ready();
        })
        .catch(function () {
          self.status.textContent = "Waveform unavailable.";
          self._draw();
        });
    },

    _draw: function (position) {
      var canvas = this.canvas;
      var width = canvas.clientWidth || 600;
      var height = canvas.clientHeight || 64;
      var ratio = window.devicePixelRatio || 1;
      if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
        canvas.width = Math.round(width * ratio);
        canvas.height = Math.round(height * ratio);
      }
      var context = canvas.getContext("2d");
      if (!context) return;
      context.setTransform(ratio, 0, 0, ratio, 0, 0);
      context.clearRect(0, 0, width, height);
      var duration = this.duration;
      var time = this._dragging !== null ? this._dragging * duration : position !== undefined ? position : this.currentTime;
      var played = duration > 0 ? Math.min(1, time / duration) * width : 0;
      var middle = height / 2;
      var style = getComputedStyle(this.root);
      var waveColour = style.getPropertyValue("--fb-wave").trim() || "#9aa3b5";
      var playedColour = style.getPropertyValue("--fb-played").trim() || "#2c3390";
      var markerColour = style.getPropertyValue("--fb-marker").trim() || "#b3261e";
      var peaks = this.peaks;
      if (peaks && peaks.buckets > 0) {
        var per = peaks.buckets / width;
        for (var x = 0; x < width; x++) {
          var first = Math.floor(x * per);
          var last = Math.max(first + 1, Math.floor((x + 1) * per));
          var low = 0;
          var high = 0;
          for (var i = first; i < last && i < peaks.buckets; i++) {
            if (peaks.min[i] < low) low = peaks.min[i];
            if (peaks.max[i] > high) high = peaks.max[i];
          }
          var top = middle - high * middle * 0.95;
          var bottom = middle - low * middle * 0.95;
          context.fillStyle = x < played ? playedColour : waveColour;
          context.fillRect(x, top, 1, Math.max(1, bottom - top));
        }
      } else {
        context.fillStyle = waveColour;
        context.fillRect(0, middle, width, 1);
        context.fillStyle = playedColour;
        context.fillRect(0, middle - 1, played, 3);
      }
      if (duration > 0) {
        context.font = "11px system-ui, sans-serif";
        this.markers.forEach(function (marker) {
          var mx = Math.round((marker.time / duration) * width) + 0.5;
          context.strokeStyle = markerColour;
          context.setLineDash([4, 3]);
          context.beginPath();
          context.moveTo(mx, 0);
          context.lineTo(mx, height);
          context.stroke();
          context.setLineDash([]);
          if (marker.label) {
            context.fillStyle = markerColour;
            var textWidth = context.measureText(marker.label).width;
            context.fillText(marker.label, mx + 4 + textWidth > width ? mx - 4 - textWidth : mx + 4, 11);
          }
        });
      }
      context.fillStyle = "#1d2330";
      context.fillRect(Math.min(width - 2, played), 0, 2, height);
      this.timeText.textContent = formatTime(time) + " / " + formatTime(duration);
      this.wave.setAttribute("aria-valuemax", duration.toFixed(1));
      this.wave.setAttribute("aria-valuenow", time.toFixed(1));
      this.wave.setAttribute("aria-valuetext", formatTime(time) + " of " + formatTime(duration));
    },
  };

  function mount(root, options) {
    return root.floorboardPlayer || new Player(root, options);
  }

  function bindKeys(player, options) {
    options = options || {};
    var target = options.target || document;
    var step = options.step || 5;
    function typing(node) {
      return node && (node.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(node.tagName));
    }
    function onKey(event) {
      if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
      // A focused button already answers space with a click of its own.
      if (event.key === " " && event.target && event.target.tagName === "BUTTON") return;
      if (event.key === " ") player.toggle();
      else if (event.key === "ArrowLeft") player.seekBy(-step);
      else if (event.key === "ArrowRight") player.seekBy(step);
      else return;
      event.preventDefault();
    }
    target.addEventListener("keydown", onKey);
    return function () { target.removeEventListener("keydown", onKey); };
  }

  function setTogether(value) {
    together = !!value;
    var box = document.getElementById("play-together");
    if (box) box.checked = together;
  }

  function mountAll() {
    document.querySelectorAll("[data-floorboard-player]").forEach(function (root) { mount(root); });
    var box = document.getElementById("play-together");
    if (box) box.addEventListener("change", function () { setTogether(box.checked); });
  }

  window.FloorboardPlayer = {
    RATES: RATES,
    EVENTS: EVENTS,
    mount: mount,
    get: function (root) { return root.floorboardPlayer; },
    bindKeys: bindKeys,
    formatTime: formatTime,
    setTogether: setTogether,
    get together() { return together; },
    get players() { return PLAYERS.slice(); },
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
