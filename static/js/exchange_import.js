// Import page: show only the options of the chosen kind of file (the form works without this too).
(function () {
  const kind = document.querySelector("#upload-form select[name=kind]");
  if (!kind) return;
  const groups = document.querySelectorAll(".kind-options");
  function update() {
    groups.forEach(function (group) {
      group.hidden = !group.dataset.kinds.split(" ").includes(kind.value);
    });
  }
  kind.addEventListener("change", update);
  update();
})();
