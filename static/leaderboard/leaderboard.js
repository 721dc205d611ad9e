// Leaderboard page: filters apply on change and the name search as one stops typing (the
// search box keeps the focus across the reload), the interval switch and the column chooser
// change the page without a reload and stay in every link (so the permalink keeps them), the
// BibTeX copies with one click, and the charts load after the table; a click on a point or bar
// opens its system.
(function () {
  "use strict";
  var form = document.getElementById("board-controls");
  var board = document.getElementById("board");

  if (form) {
    // Empty filters stay out of the URL, so it reads like the permalink.
    form.addEventListener("submit", function () {
      form.querySelectorAll("select, input").forEach(function (field) {
        if (!field.value || ((field.type === "checkbox") && !field.checked)) { field.disabled = true; }
      });
      // Ranking by calibrated values goes with the human-calibrated view it ranks by.
      var calibrated = document.getElementById("board-calibrated");
      var rankCalibrated = document.getElementById("rank-calibrated");
      if (rankCalibrated && calibrated && !calibrated.value) { rankCalibrated.disabled = true; }
    });
    form.querySelectorAll("select, input[name=group], input[name=rank_by]").forEach(function (field) {
      field.addEventListener("change", function () { form.requestSubmit(); });
    });
    // The name search applies like the filters: a pause in typing applies it, no Enter needed.
    var search = document.getElementById("board-search");
    var FOCUS_KEY = "floorboard:search-focus";
    if (search) {
      var timer = null;
      var applied = search.value;
      search.addEventListener("input", function () {
        window.clearTimeout(timer);
        timer = window.setTimeout(function () {
          if (search.value.trim() === applied.trim()) { return; }
          try { window.sessionStorage.setItem(FOCUS_KEY, "1"); } catch (error) { /* private mode */ }
          form.requestSubmit();
        }, 500);
      });
      // Enter applies it at once: the pause's timer must not submit it again while the
      // page loads (the second submission cancelled the first).
      form.addEventListener("submit", function () { window.clearTimeout(timer); });
      var refocus = false;
      try { refocus = window.sessionStorage.getItem(FOCUS_KEY) === "1"; window.sessionStorage.removeItem(FOCUS_KEY); } catch (error) { refocus = false; }
      if (refocus) {
        search.focus();
        search.setSelectionRange(search.value.length, search.value.length);
      }
    }
  }

  function withParam(href, name, value) {
    var url = new URL(href, window.location.href);
    if (value) { url.searchParams.set(name, value); } else { url.searchParams.delete(name); }
    return url.pathname + url.search;
  }

  // Links that carry the board's state (the permalink among them), rewritten when a switch
  // changes the state without a reload.
  var STATE_LINKS = "#board thead a, #permalink, #export-csv, #export-json, #show-all-rows, #clear-filters, nav.splits a";

  var ciSwitch = document.getElementById("show-ci");
  if (ciSwitch && board) {
    ciSwitch.addEventListener("change", function (event) {
      event.stopPropagation();
      var value = ciSwitch.checked ? "1" : "";
      board.classList.toggle("show-ci", ciSwitch.checked);
      document.querySelectorAll(STATE_LINKS)
        .forEach(function (link) { link.setAttribute("href", withParam(link.getAttribute("href"), "ci", value)); });
      window.history.replaceState(null, "", withParam(window.location.href, "ci", value));
    });
  }

  // --- Columns: hidden ones get a generated style rule, by position; the hidden ones are in
  // the URL (hide=...), like every other part of the board's state -----------------------------
  var menu = document.getElementById("columns-menu");
  if (menu && board) {
    var hiddenField = document.getElementById("hidden-columns");
    var fixedCount = parseInt(board.getAttribute("data-fixed") || "5", 10);
    var fixedKeys = ["rank", "system", "system_type", "org", "date"];
    var metricKeys = Array.prototype.map.call(
      board.querySelectorAll("thead tr:nth-child(2) th"), function (th) { return th.getAttribute("data-col"); });
    var style = document.createElement("style");
    document.head.appendChild(style);
    var hidden = hiddenField && hiddenField.value ? hiddenField.value.split(",") : [];

    var apply = function () {
      var rules = [];
      hidden.forEach(function (key) {
        var fixed = fixedKeys.indexOf(key);
        var metric = metricKeys.indexOf(key);
        if (fixed >= 0) {
          rules.push("#board thead tr:first-child > th:nth-child(" + (fixed + 1) + ")");
          rules.push("#board tbody tr:not(.group-row):not(.empty) > td:nth-child(" + (fixed + 1) + ")");
        } else if (metric >= 0) {
          rules.push("#board thead tr:nth-child(2) > th:nth-child(" + (metric + 1) + ")");
          rules.push("#board tbody tr:not(.group-row):not(.empty) > td:nth-child(" + (fixedCount + metric + 1) + ")");
        }
      });
      style.textContent = rules.length ? rules.join(",\n") + " { display: none; }" : "";
      // A group heading spans what is left of its metrics, and goes when none is.
      var groups = board.querySelectorAll("thead tr:first-child > th.metric-group");
      var at = 0;
      Array.prototype.forEach.call(groups, function (th) {
        var span = parseInt(th.getAttribute("data-span") || th.getAttribute("colspan") || "1", 10);
        th.setAttribute("data-span", String(span));
        var shown = metricKeys.slice(at, at + span).filter(function (key) { return hidden.indexOf(key) < 0; }).length;
        th.setAttribute("colspan", String(Math.max(1, shown)));
        th.hidden = shown === 0;
        at += span;
      });
      menu.querySelectorAll("input[data-toggle-col]").forEach(function (box) {
        box.checked = hidden.indexOf(box.getAttribute("data-toggle-col")) < 0;
      });
    };
    menu.addEventListener("change", function (event) {
      var key = event.target.getAttribute("data-toggle-col");
      if (!key) { return; }
      hidden = hidden.filter(function (k) { return k !== key; });
      if (!event.target.checked) { hidden.push(key); }
      var value = hidden.join(",");
      if (hiddenField) { hiddenField.value = value; }
      document.querySelectorAll(STATE_LINKS)
        .forEach(function (link) { link.setAttribute("href", withParam(link.getAttribute("href"), "hide", value)); });
      window.history.replaceState(null, "", withParam(window.location.href, "hide", value));
      apply();
    });
    apply();
  }

  // --- Copy buttons (BibTeX) ----------------------------------------------------------------
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.querySelector(button.getAttribute("data-copy"));
      if (!source) { return; }
      var done = function () { button.textContent = "Copied"; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(source.textContent).then(done, function () {
          window.getSelection().selectAllChildren(source);
        });
      } else {
        window.getSelection().selectAllChildren(source);
      }
    });
  });

  // --- Charts -------------------------------------------------------------------------------
  var charts = document.getElementById("charts");
  if (!charts) { return; }
  var status = document.getElementById("chart-status");
  var NARROW = 700;

  function loadPlotly(src) {
    return new Promise(function (resolve, reject) {
      if (window.Plotly) { resolve(window.Plotly); return; }
      var script = document.createElement("script");
      script.src = src;
      script.onload = function () { resolve(window.Plotly); };
      script.onerror = function () { reject(new Error("plotly.js did not load")); };
      document.head.appendChild(script);
    });
  }

  // On a phone: the title wraps and shrinks, the legend goes below the plot, and plotly's
  // toolbar stays out of the way of the chart's own buttons.
  function narrowLayout(layout) {
    var title = layout.title && layout.title.text;
    if (title) {
      var words = title.split(" ");
      var lines = [""];
      words.forEach(function (word) {
        var line = lines[lines.length - 1];
        if (line && (line + " " + word).length > 34) { lines.push(word); } else { lines[lines.length - 1] = line ? line + " " + word : word; }
      });
      layout.title = Object.assign({}, layout.title, { text: lines.join("<br>"), font: { size: 13 }, x: 0, xanchor: "left" });
      layout.margin = Object.assign({}, layout.margin, { l: 48, r: 12, t: Math.max(layout.margin ? layout.margin.t : 0, 60 + 16 * lines.length) });
    }
    (layout.updatemenus || []).forEach(function (menu) { menu.y = 1.0; menu.yanchor = "bottom"; menu.pad = { b: 4 }; });
    layout.legend = Object.assign({}, layout.legend, { font: { size: 10 } });
    layout.margin = Object.assign({}, layout.margin, { b: 40 });
    Object.keys(layout).forEach(function (key) {
      if (/^xaxis\d*$/.test(key) && layout[key].tickangle !== undefined) {
        layout[key] = Object.assign({}, layout[key], { tickangle: -90, tickfont: { size: 9 } });
      }
    });
    return layout;
  }

  // The legend runs under the plot (charts.py) and wraps into as many rows as the chart's
  // width needs: the chart's box grows by the legend's height, so the plot keeps the height it
  // was given and the legend never needs a scrollbar, whatever the window's width. The height
  // is the box's, not the layout's (a layout's height would pin its width too, and the chart
  // would stop following the window).
  function fitLegend(Plotly, node, height) {
    var legend = node.querySelector("g.legend rect.bg");
    var frame = node.querySelector(".main-svg");
    var wanted = height + (legend ? Math.ceil(legend.getBBox().height) : 0);
    if (!frame || Math.abs(frame.getBoundingClientRect().height - wanted) <= 2) {
      return Promise.resolve();
    }
    node.style.height = wanted + "px";
    return Plotly.Plots.resize(node);
  }

  // Point names are placed apart on the server for a typical chart size; at the size the
  // chart really has, any name that still collides with another, or leaves the chart, is
  // hidden (the point keeps its name on hover).
  function declutter(node) {
    var frame = node.querySelector(".main-svg");
    if (!frame) { return; }
    var bounds = frame.getBoundingClientRect();
    var kept = [];
    var hidden = 0;
    node.querySelectorAll(".textpoint text").forEach(function (text) {
      text.style.display = "";
      if (!text.textContent) { return; }
      var box = text.getBoundingClientRect();
      var outside = box.left < bounds.left || box.right > bounds.right || box.top < bounds.top || box.bottom > bounds.bottom;
      var collides = kept.some(function (other) {
        return Math.min(box.right, other.right) - Math.max(box.left, other.left) > 1 &&
          Math.min(box.bottom, other.bottom) - Math.max(box.top, other.top) > 1;
      });
      if (outside || collides) { text.style.display = "none"; hidden += 1; } else { kept.push(box); }
    });
    node.dataset.hiddenLabels = String(hidden);
  }

  fetch(charts.dataset.src, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then(function (response) {
      if (!response.ok) { throw new Error("charts: HTTP " + response.status); }
      return response.json();
    })
    .then(function (figures) {
      if (!figures.points) {
        status.textContent = "No rows to plot.";
        charts.dataset.ready = "1";
        return null;
      }
      return loadPlotly(charts.dataset.plotly).then(function (Plotly) {
        var narrow = window.innerWidth < NARROW;
        var options = { responsive: true, displaylogo: false, displayModeBar: narrow ? false : "hover" };
        var holder = document.getElementById("chart-list");
        return Promise.all(figures.figures.map(function (figure, index) {
          var node = document.createElement("div");
          node.className = "chart";
          node.id = "chart-" + index;
          holder.appendChild(node);
          var layout = narrow ? narrowLayout(figure.layout) : figure.layout;
          var height = layout.height;
          return Plotly.newPlot(node, figure.data, layout, options).then(function () {
            return fitLegend(Plotly, node, height);
          }).then(function () {
            declutter(node);
            // A redraw (the window resized, a pair chosen) may wrap the legend anew.
            node.on("plotly_afterplot", function () {
              declutter(node);
              fitLegend(Plotly, node, height);
            });
            // A point or bar opens its system's page (the last custom field is its address).
            node.on("plotly_click", function (event) {
              var point = event.points && event.points[0];
              var data = point && point.customdata;
              var url = data && data[data.length - 1];
              if (url && url.charAt(0) === "/") { window.location.href = url; }
            });
          });
        })).then(function () {
          status.textContent = "Click a point or bar to open its system.";
          charts.dataset.ready = "1";
        });
      });
    })
    .catch(function (error) { status.textContent = "Charts unavailable: " + error.message; });
})();
