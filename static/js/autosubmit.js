// <select data-autosubmit>: submit its form on change (in place of an inline onchange, which the CSP forbids).
(function () {
  "use strict";
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
