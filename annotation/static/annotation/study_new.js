// New study: choosing another benchmark or kind reloads the page with that benchmark's judges,
// submissions and languages, and the kind's labels and guideline (a new benchmark starts from
// its first kind).
(function () {
  "use strict";
  var form = document.getElementById("study-choice");
  if (!form) { return; }
  var benchmark = document.getElementById("choose-benchmark");
  var kind = document.getElementById("choose-kind");
  if (benchmark) {
    benchmark.addEventListener("change", function () {
      if (kind) { kind.disabled = true; }
      form.requestSubmit();
    });
  }
  if (kind) { kind.addEventListener("change", function () { form.requestSubmit(); }); }
})();
