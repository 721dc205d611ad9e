// The submit page: sends a bundle in chunks to the server, or in parts straight to S3 through
// presigned URLs, with a progress bar, retries and resume; then asks the server to validate it.
(function () {
  "use strict";

  const form = document.getElementById("upload-form");
  if (!form) return;

  const fileInput = document.getElementById("bundle-file");
  const button = document.getElementById("upload-button");
  const cancelButton = document.getElementById("cancel-button");
  const progressBox = document.getElementById("upload-progress-box");
  const progress = document.getElementById("upload-progress");
  const progressText = document.getElementById("upload-progress-text");
  const message = document.getElementById("upload-message");
  const reportBox = document.getElementById("upload-report");
  const csrf = form.querySelector("[name=csrfmiddlewaretoken]").value;

  const MAX_ATTEMPTS = 6;
  const S3_PARALLEL = 4;
  // The benchmark's declared options (option_*) go with the submission's own fields.
  const FIELDS = ["team", "system_name", "system_type", "judge", "allow_partial", "publish"].concat(
    Array.from(form.querySelectorAll("[name^='option_']"), (field) => field.name)
  );

  let active = null; // {state, xhrs, stopped}
  let transferring = false;

  class UploadFailure extends Error {}

  function formatBytes(bytes) {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
  }

  function setProgress(done, total) {
    const pct = total && done >= total ? 100 : Math.floor((done * 100) / (total || 1));
    progress.value = pct;
    progressText.textContent = `${pct}% (${formatBytes(done)} of ${formatBytes(total)})`;
  }

  function say(text, isError) {
    message.textContent = text;
    message.className = isError ? "error" : "";
  }

  function showErrors(lines) {
    const list = document.getElementById("upload-errors");
    if (!list) return;
    list.replaceChildren(...lines.filter(Boolean).map((line) => {
      const item = document.createElement("li");
      item.textContent = line;
      return item;
    }));
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  function backoff(attempt) {
    return Math.min(30000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
  }

  function checkStopped() {
    if (active && active.stopped) throw new UploadFailure(active.stopped);
  }

  async function api(url, options) {
    const opts = options || {};
    const response = await fetch(url, {
      method: opts.method || "GET",
      body: opts.body,
      credentials: "same-origin",
      headers: Object.assign({ "X-CSRFToken": csrf, Accept: "application/json" }, opts.headers),
    });
    let body = {};
    try {
      body = await response.json();
    } catch (err) {
      body = { error: `the server answered HTTP ${response.status}` };
    }
    return { status: response.status, ok: response.ok, body };
  }

  // One request with upload progress; resolves with the status (0 on a network error).
  function send(method, url, blob, headers, onProgress) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      active.xhrs.add(xhr);
      xhr.open(method, url);
      Object.entries(headers).forEach(([name, value]) => xhr.setRequestHeader(name, value));
      xhr.upload.onprogress = (event) => onProgress(event.loaded);
      xhr.onloadend = () => {
        active.xhrs.delete(xhr);
        let body = {};
        try {
          body = JSON.parse(xhr.responseText || "{}");
        } catch (err) {
          body = {};
        }
        resolve({ status: xhr.status, body });
      };
      xhr.send(blob);
    });
  }

  function resumeKey(file) {
    return `floorboard-upload:${form.dataset.benchmark}:${file.name}:${file.size}:${file.lastModified}`;
  }

  function formFields() {
    const data = new FormData(form);
    const fields = {};
    FIELDS.forEach((name) => {
      fields[name] = data.has(name) ? String(data.get(name)) : "";
    });
    return fields;
  }

  async function startOrResume(file) {
    const key = resumeKey(file);
    const saved = JSON.parse(localStorage.getItem(key) || "null");
    if (saved) {
      const same = JSON.stringify(saved.fields) === JSON.stringify(formFields());
      const found = await api(saved.state).catch(() => ({ status: 0, ok: false, body: {} }));
      if (same && found.ok && found.body.status === "uploading") {
        say(`Resuming: the server already holds ${formatBytes(found.body.received)}.`);
        return found.body;
      }
      if (same && (found.status === 0 || found.status >= 500)) {
        // The server or its storage did not answer: the upload is kept, to resume once it does.
        throw new UploadFailure(found.body.detail || found.body.error || "the server did not answer");
      }
      // Starting over: the old upload is given up now, so it stops counting against the limits.
      if (saved.cancel) await api(saved.cancel, { method: "POST" }).catch(() => null);
    }
    localStorage.removeItem(key);
    const data = new FormData(form);
    data.delete("bundle");
    data.set("filename", file.name);
    data.set("size", String(file.size));
    const started = await api(form.dataset.startUrl, { method: "POST", body: data });
    if (!started.ok) {
      // Every problem of the form, each naming its field ("Judge: This field is required.").
      showErrors(started.body.messages || [started.body.error]);
      throw new UploadFailure(started.body.error);
    }
    localStorage.setItem(
      key,
      JSON.stringify({
        state: started.body.urls.state,
        cancel: started.body.urls.cancel,
        fields: formFields(),
      })
    );
    return started.body;
  }

  async function sendChunks(file, state) {
    const size = file.size;
    let offset = state.received;
    let failures = 0;
    setProgress(offset, size);
    while (offset < size) {
      checkStopped();
      const end = Math.min(offset + state.chunk_bytes, size);
      const start = offset;
      const result = await send(
        "PUT",
        `${state.urls.chunk}?offset=${start}`,
        file.slice(start, end),
        { "X-CSRFToken": csrf, "Content-Type": "application/octet-stream" },
        (loaded) => setProgress(start + loaded, size)
      );
      checkStopped();
      if (result.status === 200) {
        offset = result.body.received;
        failures = 0;
        setProgress(offset, size);
        continue;
      }
      if (result.status === 409 && typeof result.body.received === "number") {
        offset = result.body.received; // the server holds a different amount: continue from there
        continue;
      }
      if (result.status >= 400 && result.status < 500) {
        throw new UploadFailure(result.body.error || `HTTP ${result.status}`);
      }
      failures += 1;
      if (failures >= MAX_ATTEMPTS) {
        throw new UploadFailure(`the connection failed ${failures} times in a row`);
      }
      say(`Connection problem; trying again (${failures} of ${MAX_ATTEMPTS - 1})…`, true);
      await sleep(backoff(failures));
      const found = await api(state.urls.state).catch(() => null);
      if (found && found.ok) offset = found.body.received;
    }
  }

  async function sendParts(file, state) {
    const size = file.size;
    const partBytes = state.part_bytes;
    const done = new Set(state.parts_done);
    const inFlight = new Map();
    let doneBytes = state.received;
    const todo = [];
    for (let n = 1; n <= state.part_count; n += 1) if (!done.has(n)) todo.push(n);
    const show = () => {
      let sending = 0;
      inFlight.forEach((loaded) => {
        sending += loaded;
      });
      setProgress(doneBytes + sending, size);
    };
    show();

    async function sendPart(n) {
      const start = (n - 1) * partBytes;
      const blob = file.slice(start, Math.min(start + partBytes, size));
      for (let attempt = 1; ; attempt += 1) {
        checkStopped();
        const signed = await api(state.urls.parts, {
          method: "POST",
          body: JSON.stringify({ parts: [n] }),
          headers: { "Content-Type": "application/json" },
        });
        if (!signed.ok) throw new UploadFailure(signed.body.error);
        const result = await send("PUT", signed.body.urls[String(n)], blob, {}, (loaded) => {
          inFlight.set(n, loaded);
          show();
        });
        inFlight.delete(n);
        checkStopped();
        if (result.status === 200) {
          doneBytes += blob.size;
          show();
          return;
        }
        if (attempt >= MAX_ATTEMPTS) {
          throw new UploadFailure(`part ${n} failed ${attempt} times (HTTP ${result.status})`);
        }
        show();
        say(`Part ${n} failed; trying again (${attempt} of ${MAX_ATTEMPTS - 1})…`, true);
        await sleep(backoff(attempt));
      }
    }

    async function worker() {
      while (todo.length) {
        const n = todo.shift();
        try {
          await sendPart(n);
        } catch (err) {
          if (active && !active.stopped) active.stopped = err.message;
          throw err;
        }
      }
    }
    const workers = [];
    for (let i = 0; i < Math.min(S3_PARALLEL, todo.length); i += 1) workers.push(worker());
    const outcomes = await Promise.allSettled(workers);
    const failed = outcomes.find((outcome) => outcome.status === "rejected");
    if (failed) throw failed.reason;
  }

  function pageLink(state) {
    const link = document.createElement("a");
    link.href = state.urls.page;
    link.id = "upload-page-link";
    link.textContent = "Open the upload's status page.";
    const wrapper = document.createElement("span");
    wrapper.append(" ", link);
    return wrapper;
  }

  // A worker finishes the upload: ask how it goes until it is over. Answers as the finish
  // request would have: 200 accepted, 422 rejected, otherwise the reason it is open again.
  async function outcome(state, first) {
    let body = first.body;
    let attempt = 0;
    while (body.finishing) {
      await sleep(Math.min(5000, 1000 + 500 * attempt));
      attempt += 1;
      const polled = await api(state.urls.state);
      if (!polled.ok) continue;
      body = polled.body.outcome || { finishing: false, status: polled.body.status, error: polled.body.error };
    }
    if (body.status === "accepted") return { status: 200, body };
    if (body.status === "rejected") return { status: 422, body };
    return { status: 409, body: { error: body.error || `the upload is ${body.status}` } };
  }

  async function finish(file, state) {
    say("Upload complete. Checking the whole bundle before it is queued…");
    cancelButton.hidden = true;
    let result = await api(state.urls.finish, { method: "POST" });
    if (result.status === 202) {
      say("Upload complete. A worker is checking the whole bundle; this page follows it…");
      result = await outcome(state, result);
    }
    if (result.status === 200 && result.body.redirect) {
      localStorage.removeItem(resumeKey(file));
      say("Bundle accepted. Opening the submission…");
      window.location.assign(result.body.redirect);
      return;
    }
    if (result.status === 422) {
      localStorage.removeItem(resumeKey(file));
      reportBox.innerHTML = result.body.report_html;
      say("The bundle was rejected and nothing was queued; the problems are listed below.", true);
      message.appendChild(pageLink(state));
      return;
    }
    if (result.status === 429) {
      say(`${result.body.error} The upload is kept: finish it later from its status page.`, true);
      message.appendChild(pageLink(state));
      return;
    }
    throw new UploadFailure(result.body.error);
  }

  async function run(file) {
    reportBox.innerHTML = "";
    showErrors([]);
    button.disabled = true;
    cancelButton.hidden = false;
    active = { state: null, xhrs: new Set(), stopped: null };
    setProgress(0, file.size);
    say(`Uploading ${file.name}…`);
    try {
      transferring = true;
      const state = await startOrResume(file);
      active.state = state;
      // The bar shows once there is an upload to measure, not before the first byte.
      progressBox.hidden = false;
      if (state.method === "s3") await sendParts(file, state);
      else await sendChunks(file, state);
      transferring = false;
      setProgress(file.size, file.size);
      await finish(file, state);
    } catch (err) {
      // The server's reasons are sentences already: one full stop, not "required..".
      const reason = (err instanceof UploadFailure ? err.message : `unexpected error: ${err}`).replace(/\.+$/, "");
      const resumable = active.state && active.stopped !== "cancelled";
      say(
        active.stopped === "cancelled"
          ? "Upload cancelled."
          : `Upload stopped: ${reason}.${resumable ? " Choose the same file again to resume." : ""}`,
        active.stopped !== "cancelled"
      );
    } finally {
      transferring = false;
      button.disabled = false;
      cancelButton.hidden = true;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const file = fileInput.files[0];
    if (!file) {
      say(`Choose a file (${fileInput.accept.split(",").join(" or ")}) first.`, true);
      return;
    }
    run(file);
  });

  cancelButton.addEventListener("click", async () => {
    if (!active) return;
    active.stopped = "cancelled";
    active.xhrs.forEach((xhr) => xhr.abort());
    if (active.state) {
      await api(active.state.urls.cancel, { method: "POST" });
      const file = fileInput.files[0];
      if (file) localStorage.removeItem(resumeKey(file));
    }
  });

  window.addEventListener("beforeunload", (event) => {
    if (transferring) event.preventDefault();
  });
})();
