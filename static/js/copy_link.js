// The set-password link box: clicking the field selects it; the Copy button copies it (no inline handlers:
// the Content-Security-Policy forbids them).
(function () {
  "use strict";
  document.querySelectorAll("[data-select-on-click]").forEach(function (input) {
    input.addEventListener("click", function () { input.select(); });
  });
  document.querySelectorAll("button[data-copy-from]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy-from"));
      if (source && navigator.clipboard) navigator.clipboard.writeText(source.value);
      button.textContent = "Copied";
    });
  });
})();
