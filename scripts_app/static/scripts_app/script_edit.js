// The script change page: findings update while typing (debounced; the text is
// analysed, not stored), and "Anhören" plays the text being edited as the caller
// would hear it. A file: the admin's Content-Security-Policy runs no inline script.
(function () {
  var form = document.getElementById("scriptoverride_form");
  var text = document.getElementById("id_text");
  var live = document.getElementById("script-analysis-live");
  if (!form || !text || !live) { return; }
  var touchpoint = document.getElementById("id_touchpoint_id");
  var tenant = document.getElementById("id_tenant");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var base = live.getAttribute("data-base");

  function body(extra) {
    var data = new URLSearchParams();
    data.set("text", text.value);
    data.set("touchpoint", touchpoint ? touchpoint.value : "");
    Object.keys(extra || {}).forEach(function (key) { data.set(key, extra[key]); });
    return data;
  }

  var timer = null, sent = 0;
  function analyse() {
    var mine = ++sent;
    fetch(base + "analyse/", { method: "POST", body: body(), credentials: "same-origin",
                               headers: { "X-CSRFToken": csrf } })
      .then(function (response) { return response.json(); })
      .then(function (json) {
        if (mine !== sent) { return; }  // an older answer must not replace a newer one
        live.innerHTML = json.html;
        live.setAttribute("data-findings", String(json.findings));
      });
  }
  function later() { clearTimeout(timer); timer = setTimeout(analyse, 400); }
  text.addEventListener("input", later);
  if (touchpoint) { touchpoint.addEventListener("change", later); }

  var play = document.getElementById("script-play");
  var audio = document.getElementById("script-audio");
  var problem = document.getElementById("script-play-error");
  if (play && audio) {
    play.addEventListener("click", function () {
      problem.textContent = "";
      var tenantId = (tenant && tenant.value) || play.getAttribute("data-tenant") || "";
      fetch(base + "preview.mp3", { method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrf },
                                    body: body({ tenant_id: tenantId }) })
        .then(function (response) {
          if (!response.ok) { throw new Error("preview"); }
          return response.blob();
        })
        .then(function (blob) {
          if (audio.src) { URL.revokeObjectURL(audio.src); }
          audio.src = URL.createObjectURL(blob);
          audio.hidden = false;
          return audio.play().catch(function () { /* autoplay refused: the controls are there */ });
        })
        .catch(function () { problem.textContent = play.getAttribute("data-error"); });
    });
  }
})();
