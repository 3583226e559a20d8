// Client-side sorting of score tables: <table data-sortable>, <th data-sort="number|text">,
// each cell's sort key in data-value (falls back to its text). Empty keys always sort last.
// data-sort-first="asc|desc" on a <th> sets the direction of its first click.
(function () {
  "use strict";

  function key(cell, numeric) {
    if (!cell) return null;
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    if (raw === "") return null;
    if (!numeric) return raw.toLowerCase();
    var value = parseFloat(raw);
    return isNaN(value) ? null : value;
  }

  function sortBy(table, th, column, numeric) {
    var body = table.tBodies[0];
    var current = th.getAttribute("aria-sort");
    // Numbers start high-to-low (best score first), text A-to-Z, unless data-sort-first says otherwise.
    var first = th.getAttribute("data-sort-first");
    var descending = current ? current === "ascending" : first ? first === "desc" : numeric;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var k1 = key(r1.cells[column], numeric), k2 = key(r2.cells[column], numeric);
      if (k1 === null && k2 === null) return 0;
      if (k1 === null) return 1;
      if (k2 === null) return -1;
      var order = k1 < k2 ? -1 : k1 > k2 ? 1 : 0;
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  document.querySelectorAll("table[data-sortable]").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      var kind = th.getAttribute("data-sort");
      if (!kind) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort-button";
      button.title = "Sort by this column";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, th, column, kind === "number"); });
    });
  });
})();

// "Compare selected": the configuration ticked first is A, whatever the table's current order.
(function () {
  "use strict";
  document.querySelectorAll("form[data-tick-order]").forEach(function (form) {
    var ticked = [];
    form.querySelectorAll('input[type="checkbox"][name="c"]').forEach(function (box) {
      if (box.checked) ticked.push(box.value);
      box.addEventListener("change", function () {
        ticked = ticked.filter(function (value) { return value !== box.value; });
        if (box.checked) ticked.push(box.value);
      });
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var params = new URLSearchParams();
      ticked.forEach(function (value) { params.append("c", value); });
      new FormData(form).forEach(function (value, name) { if (name !== "c") params.append(name, value); });
      window.location.assign(form.action + "?" + params.toString());
    });
  });
})();
