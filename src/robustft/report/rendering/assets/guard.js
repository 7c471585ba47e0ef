// Loaded first: records every script error, failed resource, rejected promise and console.error, so a
// headless check can read them from the page (body data-errors and #page-errors) as well as from the log.
window.__reportErrors = [];
window.addEventListener("error", function (event) {
  var where = event.target && event.target !== window ? (event.target.tagName + " " + (event.target.alt || "")) : "";
  window.__reportErrors.push("error: " + (event.message || ("failed to load " + where)));
}, true);
window.addEventListener("unhandledrejection", function (event) {
  window.__reportErrors.push("unhandled rejection: " + event.reason);
});
(function () {
  var original = console.error;
  console.error = function () {
    window.__reportErrors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    original.apply(console, arguments);
  };
})();
