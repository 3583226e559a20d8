// The endpoint form: show only the fields of the chosen kind and authentication, and start the template
// from the kind's default when the kind changes (unless the engineer has edited it).
(function () {
  "use strict";
  const form = document.getElementById("endpoint-form");
  if (!form) return;
  const templates = JSON.parse(document.getElementById("starting-templates").textContent);
  const kindFields = JSON.parse(document.getElementById("kind-fields").textContent);
  const kindOnly = ["method", "hits_path", "id_field", "score_field"];
  const kind = form.elements.kind;
  const auth = form.elements.auth_kind;
  const template = form.elements.template;
  const defaults = new Set(Object.values(templates).map((t) => t.trim()));

  function show(name, visible) {
    const row = form.querySelector('[data-field="' + name + '"]');
    if (row) row.hidden = !visible;
  }

  function update() {
    const fields = kindFields[kind.value] || [];
    kindOnly.forEach((name) => show(name, fields.includes(name)));
    const a = auth.value;
    show("auth_user", a === "basic");
    show("auth_header", a === "apikey");
    ["auth_secret_env", "auth_secret", "clear_secret"].forEach((name) => show(name, a !== ""));
  }

  kind.addEventListener("change", function () {
    const now = template.value.trim();
    if (now === "" || defaults.has(now)) template.value = templates[kind.value] || "";
    update();
  });
  auth.addEventListener("change", update);
  update();
})();
