// An upload being finished by a worker: ask its state now and then, and show the page again
// (accepted: the submission; otherwise the upload with its report or reason) once it is over.
(function () {
  const note = document.getElementById("upload-finishing");
  if (!note) return;
  const url = note.dataset.stateUrl;
  let attempt = 0;

  async function poll() {
    attempt += 1;
    try {
      const response = await fetch(url, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
        cache: "no-store",
      });
      if (response.ok) {
        const state = await response.json();
        const outcome = state.outcome;
        if (outcome && !outcome.finishing) {
          window.location.assign(outcome.redirect || window.location.href);
          return;
        }
      }
    } catch (err) {
      // A network hiccup: ask again.
    }
    setTimeout(poll, Math.min(5000, 1000 + 500 * attempt));
  }

  setTimeout(poll, 1000);
})();
