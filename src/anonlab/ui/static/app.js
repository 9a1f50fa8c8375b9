// anonlab web app: the few scripts the pages need, served by the app (nothing from the internet).
"use strict";

// A running job: poll its state and show it; reload the page when it ends.
function followJob(box) {
  const url = box.dataset.job;
  const bar = box.querySelector("progress");
  const text = box.querySelector(".step");
  async function tick() {
    const reply = await fetch(url, { headers: { Accept: "application/json" } });
    if (!reply.ok) { text.textContent = "lost contact with the app (" + reply.status + ")"; return; }
    const state = await reply.json();
    text.textContent = state.step ? state.step + " (" + state.seconds + " s)" : state.status;
    if (state.total) { bar.max = state.total; bar.value = state.done; } else { bar.removeAttribute("value"); }
    if (state.status === "queued" || state.status === "running") { setTimeout(tick, 500); }
    else { window.location.reload(); }
  }
  tick();
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-job]").forEach(followJob);
});

// Upload: the file's raw bytes in one PUT (no multipart form), so the app writes them to disk as
// they arrive; XMLHttpRequest because it reports the upload's progress.
function uploadForm(form) {
  const bar = form.querySelector("progress");
  const status = form.querySelector("[role=status]");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const file = form.querySelector("input[type=file]").files[0];
    if (!file) { status.textContent = "choose a file first"; return; }
    const query = new URLSearchParams({ name: file.name });
    for (const field of ["delimiter", "sheet"]) {
      const value = form.elements[field].value.trim();
      if (value) { query.set(field, value); }
    }
    const request = new XMLHttpRequest();
    request.open("PUT", form.dataset.upload + "?" + query.toString());
    request.setRequestHeader("Content-Type", "application/octet-stream");
    bar.hidden = false;
    bar.max = file.size || 1;
    bar.value = 0;
    status.textContent = "uploading " + file.name;
    request.upload.addEventListener("progress", (e) => {
      bar.value = e.loaded;
      if (e.loaded >= file.size) { status.textContent = "reading the table"; }
    });
    request.addEventListener("load", () => {
      let reply = {};
      try { reply = JSON.parse(request.responseText); } catch (err) { reply = {}; }
      if (request.status === 200 && reply.location) { window.location.href = reply.location; }
      else { status.textContent = "Error: " + (reply.error || "the upload failed (" + request.status + ")"); status.className = "error"; }
    });
    request.addEventListener("error", () => { status.textContent = "Error: the upload was cut off"; status.className = "error"; });
    request.send(file);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-upload]").forEach(uploadForm);
});
