// Live feasibility on the console's quota form: as the buyer edits the targeting, the form
// is posted as its "Check feasibility" button posts it (the same server code, CSRF value
// included) and the estimate of the answer replaces the one shown. Without this script the
// button does the same with a page load; this is the console's only script.
(function () {
  "use strict";
  var form = document.querySelector("form.quota-form");
  var out = document.getElementById("feasibility");
  if (!form || !out || !window.fetch || !window.DOMParser || !window.URLSearchParams) {
    return;
  }
  var timer = 0;
  var sent = 0;
  function check() {
    var body = new URLSearchParams(new FormData(form));
    body.set("do", "feasibility");
    var n = ++sent;
    out.setAttribute("aria-busy", "true");
    fetch(form.action, { method: "POST", body: body, credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (n !== sent) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var refused = doc.querySelector(".error-summary a");
        var next = doc.getElementById("feasibility");
        if (refused) {
          out.textContent = "Not estimated: " + refused.textContent;
        } else if (next) {
          out.replaceChildren.apply(out, Array.prototype.map.call(next.childNodes, function (c) {
            return document.importNode(c, true);
          }));
        }
        out.removeAttribute("aria-busy");
      })
      .catch(function () { out.removeAttribute("aria-busy"); });
  }
  function soon() {
    clearTimeout(timer);
    timer = setTimeout(check, 300);
  }
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
})();
