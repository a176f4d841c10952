/*
 * Stimmwerk callback widget. Include it on any page:
 *   <script src="https://console.example/widget/callback.js" data-tenant="acme" async></script>
 * It adds a "Rückruf anfordern" button with a small form in its own Shadow DOM and
 * posts the lead to the host that served this script. No dependencies, no cookies,
 * no other requests, and no styles that reach the page (or come in from it).
 */
(function () {
  "use strict";

  var script = document.currentScript ||
    document.querySelector('script[src*="/widget/callback.js"][data-tenant]');
  if (!script) { return; }
  var tenant = script.getAttribute("data-tenant");
  if (!tenant) {
    window.console && console.warn("Stimmwerk widget: the script tag needs data-tenant=\"<tenant>\".");
    return;
  }
  var endpoint = new URL(script.src, location.href).origin + "/v2/public/leads";
  // Stored with the lead: which consent sentence (below) the visitor saw. A new
  // sentence is a new version in leads_app/consent.py; never reword this one.
  var CONSENT_VERSION = "callback-de-1";

  // The preferred-time tokens of the API, in the words a visitor reads.
  var TIMES = [
    ["asap", "So bald wie möglich"],
    ["+30m", "In 30 Minuten"],
    ["+2h", "In 2 Stunden"],
    ["today-am", "Heute Vormittag"],
    ["today-pm", "Heute Nachmittag"],
    ["tomorrow-am", "Morgen Vormittag"],
    ["tomorrow-pm", "Morgen Nachmittag"]
  ];

  var CSS = [
    ":host{all:initial}",
    "*{box-sizing:border-box;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;}",
    ".trigger,.send{font-weight:600;font-size:15px;line-height:1.2;border:0;border-radius:999px;padding:12px 18px;cursor:pointer;",
    "background:#0b5cad;color:#fff;box-shadow:0 2px 8px rgba(0,0,0,.25)}",
    ".send{border-radius:8px;width:100%}",
    ".trigger:hover,.send:hover{background:#084a8c}",
    "button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid #f5a623;outline-offset:2px}",
    ".panel{position:absolute;right:0;bottom:56px;width:min(340px,calc(100vw - 32px));background:#fff;color:#1b1b1b;",
    "border-radius:12px;box-shadow:0 8px 32px rgba(0,0,0,.3);padding:20px;font-size:15px;line-height:1.4}",
    ".panel[hidden],.form[hidden]{display:none}",
    "h2{margin:0 32px 12px 0;font-size:18px;line-height:1.3}",
    ".close{position:absolute;top:10px;right:10px;width:32px;height:32px;border:0;border-radius:50%;",
    "background:transparent;font-size:22px;line-height:1;cursor:pointer;color:#1b1b1b}",
    ".close:hover{background:#eee}",
    "label{display:block;font-weight:600;margin:12px 0 4px}",
    "input,select{display:block;width:100%;font-size:16px;padding:8px 10px;border:1px solid #767676;",
    "border-radius:6px;background:#fff;color:#1b1b1b}",
    "input[aria-invalid=true]{border-color:#b00020}",
    ".hint{font-size:13px;color:#555;margin:4px 0 0}",
    ".consent{font-size:13px;color:#444;margin:14px 0}",
    ".trap{position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden}",
    ".error{color:#b00020;margin:10px 0 0}",
    ".error:empty,.done:empty{display:none}",
    ".done{color:#0a6b2d;font-weight:600;margin:0}"
  ].join("");

  var HTML =
    '<button type="button" class="trigger" aria-expanded="false" aria-controls="panel">Rückruf anfordern</button>' +
    '<section class="panel" id="panel" role="dialog" aria-labelledby="title" hidden>' +
    '<button type="button" class="close" aria-label="Schließen">×</button>' +
    '<h2 id="title">Wir rufen Sie zurück</h2>' +
    '<form class="form" novalidate>' +
    '<label for="phone">Ihre Telefonnummer</label>' +
    '<input id="phone" name="phone" type="tel" autocomplete="tel" inputmode="tel" aria-describedby="phone-hint">' +
    '<p class="hint" id="phone-hint">z. B. 0171 2345678 oder +49 30 1234567</p>' +
    '<label for="when">Wann passt es Ihnen?</label>' +
    '<select id="when" name="preferred_at"></select>' +
    '<div class="trap" aria-hidden="true"><label for="website">Website (bitte leer lassen)</label>' +
    '<input id="website" name="website" tabindex="-1" autocomplete="off"></div>' +
    '<p class="consent" id="consent">Mit dem Absenden willigen Sie ein, dass wir Sie unter dieser Nummer ' +
    'zu Ihrer Anfrage zurückrufen. Ihre Nummer wird nur dafür gespeichert.</p>' +
    '<button type="submit" class="send" aria-describedby="consent">Rückruf senden</button>' +
    '<p class="error" role="alert" id="error"></p>' +
    '</form>' +
    '<p class="done" role="status" aria-live="polite"></p>' +
    '</section>';

  function randomKey() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  // German words for every error the server can answer with: its `message` is English
  // for developers, so the widget reads the code (and which field was refused).
  var SORRY = "Das hat leider nicht geklappt. Bitte versuchen Sie es später erneut.";
  var FIELD_MESSAGES = {
    phone: "Bitte geben Sie eine gültige Telefonnummer ein, z. B. 0171 2345678 oder +49 30 1234567.",
    preferred_at: "Bitte wählen Sie eine Zeit aus der Liste.",
    page_url: "Diese Seite kann keine Anfrage senden. Bitte rufen Sie uns direkt an.",
    tenant: "Dieses Formular ist nicht richtig eingerichtet. Bitte rufen Sie uns direkt an."
  };
  var CODE_MESSAGES = {
    validation_error: "Bitte prüfen Sie Ihre Angaben.",
    bad_request: "Die Anfrage war ungültig. Bitte laden Sie die Seite neu und versuchen Sie es erneut.",
    malformed_json: "Die Anfrage war ungültig. Bitte laden Sie die Seite neu und versuchen Sie es erneut.",
    payload_too_large: "Die Anfrage ist zu groß. Bitte kürzen Sie Ihre Angaben.",
    unsupported_media_type: "Die Anfrage war ungültig. Bitte laden Sie die Seite neu und versuchen Sie es erneut.",
    invalid_idempotency_key: "Die Anfrage war ungültig. Bitte laden Sie die Seite neu und versuchen Sie es erneut.",
    idempotency_key_mismatch: "Bitte senden Sie das Formular noch einmal.",
    conflict: "Ihre Anfrage wird gerade bearbeitet. Bitte warten Sie einen Moment.",
    origin_forbidden: "Diese Seite darf keine Rückrufwünsche senden. Bitte rufen Sie uns direkt an.",
    tenant_forbidden: "Dieses Formular ist nicht richtig eingerichtet. Bitte rufen Sie uns direkt an.",
    tenant_required: "Dieses Formular ist nicht richtig eingerichtet. Bitte rufen Sie uns direkt an.",
    forbidden: "Diese Seite darf keine Rückrufwünsche senden. Bitte rufen Sie uns direkt an.",
    not_found: "Der Rückrufdienst ist nicht erreichbar. Bitte versuchen Sie es später erneut.",
    method_not_allowed: "Der Rückrufdienst ist nicht erreichbar. Bitte versuchen Sie es später erneut.",
    rate_limited: "Sie haben gerade viele Anfragen gesendet. Bitte versuchen Sie es in einigen Minuten erneut.",
    tenant_limit_reached: "Rückrufwünsche werden gerade nicht angenommen. Bitte rufen Sie uns direkt an.",
    database_unavailable: "Der Dienst ist gerade überlastet. Bitte versuchen Sie es gleich noch einmal.",
    service_unavailable: "Der Dienst ist gerade überlastet. Bitte versuchen Sie es gleich noch einmal.",
    internal_error: SORRY
  };

  function messageOf(body) {
    var error = body && body.error;
    if (!error) { return SORRY; }
    var fields = Object.keys(error.details || {}).filter(function (field) { return FIELD_MESSAGES[field]; });
    if (error.code === "validation_error" && fields.length) {
      return fields.map(function (field) { return FIELD_MESSAGES[field]; }).join(" ");
    }
    return CODE_MESSAGES[error.code] || SORRY;
  }

  // A constructed style sheet is no inline style, so a page whose Content-Security-
  // Policy forbids inline styles (style-src without 'unsafe-inline') still shows the
  // widget as it should. Browsers without them get a <style> element that carries
  // this script's nonce, which such a page allows if it allows styles by nonce.
  function addStyles(root) {
    if ("adoptedStyleSheets" in root && typeof CSSStyleSheet === "function") {
      try {
        var sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        root.adoptedStyleSheets = [sheet];
        return;
      } catch (e) { /* not constructable here: the <style> element below */ }
    }
    var style = document.createElement("style");
    if (script.nonce) { style.nonce = script.nonce; }
    style.textContent = CSS;
    root.insertBefore(style, root.firstChild);
  }

  function mount() {
    var host = document.createElement("div");
    host.setAttribute("data-stimmwerk-widget", tenant);
    // Inline and !important: page rules for `div` cannot move or hide the widget.
    host.style.setProperty("all", "initial", "important");
    host.style.setProperty("position", "fixed", "important");
    host.style.setProperty("right", "16px", "important");
    host.style.setProperty("bottom", "16px", "important");
    host.style.setProperty("z-index", "2147483000", "important");
    var root = host.attachShadow({ mode: "open" });
    root.innerHTML = HTML;
    addStyles(root);
    document.body.appendChild(host);

    var $ = function (selector) { return root.querySelector(selector); };
    var trigger = $(".trigger"), panel = $(".panel"), form = $(".form"), phone = $("#phone");
    var when = $("#when"), send = $(".send"), error = $(".error"), done = $(".done");
    TIMES.forEach(function (time) { when.add(new Option(time[1], time[0])); });

    function open() {
      panel.hidden = false;
      trigger.setAttribute("aria-expanded", "true");
      (form.hidden ? $(".close") : phone).focus();
    }
    function close() {
      panel.hidden = true;
      trigger.setAttribute("aria-expanded", "false");
      trigger.focus();
    }
    trigger.addEventListener("click", function () { panel.hidden ? open() : close(); });
    $(".close").addEventListener("click", close);
    root.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && !panel.hidden) { close(); }
    });

    // One key per distinct request: pressing "send" again after a lost answer
    // replays the same request, so the server stores the lead once.
    var lastBody = null, lastKey = null;

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var lead = { tenant: tenant, kind: "callback", phone: phone.value, preferred_at: when.value,
                   consent_version: CONSENT_VERSION };
      if (/^https?:$/.test(location.protocol)) { lead.page_url = location.href.split("#")[0]; }
      if (form.elements.website.value) { lead.website = form.elements.website.value; }
      var body = JSON.stringify(lead);
      if (body !== lastBody) { lastBody = body; lastKey = randomKey(); }

      error.textContent = "";
      phone.removeAttribute("aria-invalid");
      send.disabled = true;
      send.textContent = "Wird gesendet …";
      fetch(endpoint, {
        method: "POST",
        mode: "cors",
        credentials: "omit",
        headers: { "Content-Type": "application/json", "Idempotency-Key": lastKey },
        body: body
      }).then(function (response) {
        return response.json().catch(function () { return null; }).then(function (json) {
          if (response.ok) {
            form.hidden = true;
            done.textContent = "Vielen Dank! Wir rufen Sie zurück.";
            $(".close").focus();
            return;
          }
          if (json && json.error && json.error.details && json.error.details.phone) {
            phone.setAttribute("aria-invalid", "true");
            phone.focus();
          }
          error.textContent = messageOf(json);
        });
      }, function () {
        error.textContent = "Die Anfrage konnte nicht gesendet werden. Bitte prüfen Sie Ihre Verbindung.";
      }).then(function () {
        send.disabled = false;
        send.textContent = "Rückruf senden";
      });
    });
  }

  if (document.body) { mount(); } else { document.addEventListener("DOMContentLoaded", mount); }
})();
