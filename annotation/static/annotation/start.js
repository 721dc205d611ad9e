/* Enter anywhere on the page before or between batches starts the next batch. */
(function () {
  "use strict";
  var button = document.getElementById("rate-start");
  if (!button) return;
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.target === button || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    button.form.requestSubmit(button);
  });
})();
