/* Draws the study dashboard's charts (figure JSON built server-side with plotly). */
(function () {
  "use strict";
  var charts = JSON.parse(JSON.parse(document.getElementById("study-charts").textContent));
  var config = { responsive: true, displaylogo: false };
  [["strata", "chart-strata"], ["confusion", "chart-confusion"], ["raters", "chart-raters"]].forEach(function (pair) {
    var figure = charts[pair[0]];
    if (figure && window.Plotly) window.Plotly.newPlot(pair[1], figure.data, figure.layout, config);
  });
})();
