/* Tap (or click, or Enter) a figure to see it enlarged; a "full size" link under each figure opens the image
   itself, which the browser can zoom. Figures are drawn at the column's width, so on a 390-px phone their
   smallest text is about 7.5 CSS px; enlarged, it is twice that, and the overlay scrolls both ways.
   Nothing is fetched: the overlay shows the very image already on the page. */
(function () {
  "use strict";
  var SELECTOR = ".bd-article figure img, .bd-article .cell_output img";
  var overlay = null, shown = null, opener = null;

  function close() {
    if (!overlay) return;
    overlay.hidden = true;
    document.documentElement.classList.remove("aihw-zoom-open");
    if (shown) { shown.remove(); shown = null; }
    if (opener) { opener.focus(); opener = null; }
  }

  function build() {
    overlay = document.createElement("div");
    overlay.className = "aihw-zoom";
    overlay.hidden = true;
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", "Enlarged figure");
    var bar = document.createElement("div");
    bar.className = "aihw-zoom-bar";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "aihw-zoom-close";
    button.textContent = "Close \u2715";
    button.addEventListener("click", close);
    bar.appendChild(button);
    overlay.appendChild(bar);
    var frame = document.createElement("div");
    frame.className = "aihw-zoom-frame";
    overlay.appendChild(frame);
    overlay.addEventListener("click", function (event) {
      if (event.target === overlay || event.target === frame) close();
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && overlay && !overlay.hidden) close();
    });
    document.body.appendChild(overlay);
    return frame;
  }

  function open(img) {
    var frame = (overlay || build(), overlay.querySelector(".aihw-zoom-frame"));
    opener = img;
    shown = img.cloneNode(false);
    shown.removeAttribute("tabindex");
    shown.removeAttribute("role");
    shown.className = "aihw-zoom-image";
    shown.addEventListener("click", close);
    var displayed = img.getBoundingClientRect().width || img.naturalWidth || 600;
    var natural = img.naturalWidth || displayed;
    shown.style.width = Math.round(Math.min(1800, Math.max(natural, 2 * displayed))) + "px";
    frame.appendChild(shown);
    overlay.hidden = false;
    document.documentElement.classList.add("aihw-zoom-open");
    overlay.querySelector(".aihw-zoom-close").focus();
  }

  function enhance(img) {
    if (img.dataset.aihwZoom || img.closest(".animation, .aihw-zoom, .live-calc")) return;
    img.dataset.aihwZoom = "1";
    img.classList.add("aihw-zoomable");
    img.setAttribute("tabindex", "0");
    img.setAttribute("role", "button");
    var alt = img.getAttribute("alt") || "figure";
    img.setAttribute("aria-label", "Enlarge: " + alt);
    img.addEventListener("click", function () { open(img); });
    img.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(img); }
    });
    var src = img.currentSrc || img.src || "";
    if (src.indexOf("data:") === 0) return;  // an inline image (a widget's): the overlay only, no link to open
    var link = document.createElement("a");
    link.className = "aihw-fullsize";
    link.href = src;
    link.target = "_blank";
    link.rel = "noopener";
    link.textContent = "full size";
    link.setAttribute("aria-label", "Open the figure at full size: " + alt);
    var holder = img.closest("figure");
    if (holder) {
      var caption = holder.querySelector("figcaption");
      holder.insertBefore(link, caption);
    } else {
      img.insertAdjacentElement("afterend", link);
    }
  }

  function run() { document.querySelectorAll(SELECTOR).forEach(enhance); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
