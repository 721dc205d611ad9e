// Leaderboard page: filters apply on change, the interval switch toggles without a reload
// (and stays in every link, so the permalink keeps it), and the charts load after the table.
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
    });
    form.querySelectorAll("select, input[name=group]").forEach(function (field) {
      field.addEventListener("change", function () { form.requestSubmit(); });
    });
  }

  function withParam(href, name, value) {
    var url = new URL(href, window.location.href);
    if (value) { url.searchParams.set(name, value); } else { url.searchParams.delete(name); }
    return url.pathname + url.search;
  }

  var ciSwitch = document.getElementById("show-ci");
  if (ciSwitch && board) {
    ciSwitch.addEventListener("change", function (event) {
      event.stopPropagation();
      var value = ciSwitch.checked ? "1" : "";
      board.classList.toggle("show-ci", ciSwitch.checked);
      document.querySelectorAll("#board thead a, #permalink, #export-csv, #export-json")
        .forEach(function (link) { link.setAttribute("href", withParam(link.getAttribute("href"), "ci", value)); });
      window.history.replaceState(null, "", withParam(window.location.href, "ci", value));
    });
  }

  var charts = document.getElementById("charts");
  if (!charts) { return; }
  var status = document.getElementById("chart-status");

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

  fetch(charts.dataset.src, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then(function (response) {
      if (!response.ok) { throw new Error("charts: HTTP " + response.status); }
      return response.json();
    })
    .then(function (figures) {
      if (!figures.points) { status.textContent = "No rows to plot."; return null; }
      return loadPlotly(charts.dataset.plotly).then(function (Plotly) {
        var options = { responsive: true, displaylogo: false };
        var holder = document.getElementById("chart-list");
        return Promise.all(figures.figures.map(function (figure, index) {
          var node = document.createElement("div");
          node.className = "chart";
          node.id = "chart-" + index;
          holder.appendChild(node);
          return Plotly.newPlot(node, figure.data, figure.layout, options).then(function () {
            // A point or bar opens its system's page (the last custom field is its address).
            node.on("plotly_click", function (event) {
              var point = event.points && event.points[0];
              var data = point && point.customdata;
              var url = data && data[data.length - 1];
              if (url && url.charAt(0) === "/") { window.location.href = url; }
            });
          });
        })).then(function () {
          status.textContent = "";
          charts.dataset.ready = "1";
        });
      });
    })
    .catch(function (error) { status.textContent = "Charts unavailable: " + error.message; });
})();
