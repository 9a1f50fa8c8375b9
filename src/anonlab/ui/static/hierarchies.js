// anonlab web app, Hierarchies step: show only the chosen builder's fields, and preview the
// form's hierarchy as it changes (the server builds it with the library; debounced).
"use strict";

function previewForm(form) {
  const box = document.getElementById(form.dataset.previewTarget);
  const url = form.dataset.preview;
  let timer = null;
  let asked = 0;

  function showChosen() {
    const chosen = form.querySelector("input[name=builder]:checked");
    const kind = chosen ? chosen.value : "";
    form.querySelectorAll("fieldset[data-kind]").forEach((set) => {
      const off = set.dataset.kind !== kind;
      set.hidden = off;
      set.disabled = off; // a disabled fieldset's fields are not sent
    });
  }

  async function refresh() {
    const mine = ++asked;
    box.setAttribute("aria-busy", "true");
    try {
      const reply = await fetch(url, { method: "POST", body: new FormData(form) });
      const html = await reply.text();
      if (mine !== asked) { return; }
      if (reply.ok) { box.innerHTML = html; } // the app's own escaped fragment
      else { box.textContent = "Preview failed (" + reply.status + ")"; }
    } catch (err) {
      if (mine === asked) { box.textContent = "Lost contact with the app"; }
    } finally {
      if (mine === asked) { box.removeAttribute("aria-busy"); }
    }
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 350);
  }

  form.addEventListener("input", later);
  form.addEventListener("change", () => { showChosen(); later(); });
  showChosen();
  if (form.dataset.initial === "1") { refresh(); }
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-preview]").forEach(previewForm);
});
