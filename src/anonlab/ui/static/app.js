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
