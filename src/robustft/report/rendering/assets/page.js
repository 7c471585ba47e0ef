// Filters the adversarial examples of a page by method, recipe and outcome. The URL hash sets the starting filter
// (e.g. examples-004.html#outcome=succeeded), so a link can point at a selection, and the links to the other
// example pages carry the filter on.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("#examples tbody tr[data-outcome]"));
  var pageLinks = Array.prototype.slice.call(document.querySelectorAll("a.page-link, a[rel=prev], a[rel=next]"));
  var names = ["method", "recipe", "outcome"];
  var selects = {};
  names.forEach(function (name) { selects[name] = document.getElementById("filter-" + name); });
  var shownLabel = document.getElementById("shown");

  function apply() {
    var shown = 0;
    rows.forEach(function (row) {
      var visible = names.every(function (name) {
        var value = selects[name] ? selects[name].value : "";
        return value === "" || row.getAttribute("data-" + name) === value;
      });
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (shownLabel) { shownLabel.textContent = String(shown); }
    document.body.setAttribute("data-shown", String(shown));
    carryFilter();
  }

  function carryFilter() {
    var parts = names.filter(function (name) { return selects[name] && selects[name].value !== ""; })
      .map(function (name) { return name + "=" + encodeURIComponent(selects[name].value); });
    pageLinks.forEach(function (link) {
      var target = link.getAttribute("href").split("#")[0];
      link.setAttribute("href", target + (parts.length ? "#" + parts.join("&") : ""));
    });
  }

  function fromHash() {
    var hash = window.location.hash.replace(/^#/, "");
    if (!hash) { return; }
    hash.split("&").forEach(function (part) {
      var pair = part.split("=");
      var name = decodeURIComponent(pair[0] || "");
      var value = decodeURIComponent((pair[1] || "").replace(/\+/g, " "));
      var select = selects[name];
      if (select && Array.prototype.some.call(select.options, function (o) { return o.value === value; })) {
        select.value = value;
      }
    });
  }

  names.forEach(function (name) {
    if (selects[name]) { selects[name].addEventListener("change", apply); }
  });
  fromHash();
  apply();

  window.addEventListener("load", function () {
    Array.prototype.forEach.call(document.images, function (img) {
      if (!img.complete || img.naturalWidth === 0) {
        window.__reportErrors.push("image not rendered: " + img.alt);
      }
    });
    var errors = window.__reportErrors || [];
    var box = document.getElementById("page-errors");
    if (box) { box.textContent = errors.join("\n"); }
    document.body.setAttribute("data-errors", String(errors.length));
    document.body.setAttribute("data-ready", "1");
  });
})();
