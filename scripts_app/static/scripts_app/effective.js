// The tenant picker of the effective-scripts page shows the chosen tenant at once.
// A file, not an inline onchange handler: the admin's Content-Security-Policy runs no
// inline script.
document.querySelectorAll("select[data-submit-on-change]").forEach(function (select) {
  select.addEventListener("change", function () { select.form.submit(); });
});
