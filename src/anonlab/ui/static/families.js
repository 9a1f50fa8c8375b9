// anonlab web app: a family's method page shows only the chosen masking method's parameters.
"use strict";

function showChosenMethod(form) {
  const choice = form.querySelector("select[name=method]");
  if (!choice) { return; }
  const groups = form.querySelectorAll("[data-group^='parameters.']");
  function update() {
    groups.forEach((group) => {
      const mine = group.dataset.group === "parameters." + choice.value;
      group.hidden = !mine;
      group.querySelectorAll("input, select, textarea").forEach((input) => { input.disabled = !mine; });
    });
  }
  choice.addEventListener("change", update);
  update();
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form.family[data-command=mask]").forEach(showChosenMethod);
});
