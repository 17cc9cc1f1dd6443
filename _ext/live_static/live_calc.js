// Live calculators of the aihw book: the package's own Python (aihw.cli.live.run_json, the code behind
// `aihw <command> --json`) run in the reader's browser by Pyodide, loaded from this book's own files.
(function () {
  "use strict";
  let booting = null;  // one Pyodide per page, loaded on the first interaction

  function staticBase() {
    const root = document.documentElement.dataset.content_root || "./";
    return new URL(root + "_static/", document.baseURI).href;
  }

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = () => reject(new Error("could not load " + src));
      document.head.appendChild(s);
    });
  }

  async function boot(wheel) {
    const base = staticBase();
    await loadScript(base + "pyodide/pyodide.js");
    const py = await loadPyodide({ indexURL: base + "pyodide/", packages: [], fullStdLib: false });
    const response = await fetch(base + "live/" + wheel);
    if (!response.ok) throw new Error("could not load the package " + wheel);
    py.unpackArchive(await response.arrayBuffer(), "wheel");
    return py.pyimport("aihw.cli.live").run_json;
  }

  function runner(wheel) {
    if (!booting) booting = boot(wheel);
    return booting;
  }

  function commandLine(panel) {
    const argv = [];
    panel.querySelectorAll(".aihw-live-field").forEach((field) => {
      const flag = field.dataset.flag;
      const inputs = [...field.querySelectorAll("input")];
      if (field.dataset.kind === "flag") {
        if (inputs[0].checked) argv.push(flag);
        return;
      }
      const values = inputs.map((i) => i.value.trim());
      if (values.every((v) => v === "")) return;
      argv.push(flag, ...values);
    });
    return argv;
  }

  function lookup(obj, path) {
    return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
  }

  const SCALE = { "GB": 1e-9, "GiB": 1 / 2 ** 30, "s": 1, "ms": 1e3, "us": 1e6, "TFLOP/s": 1e-12,
                  "GB/s": 1e-9, "FLOP/B": 1, "x": 1, "": 1 };

  function format(value, unit) {
    if (typeof value !== "number") return String(value);
    const v = value * SCALE[unit];
    const text = Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-3)
      ? v.toExponential(3) : v.toLocaleString("en-US", { maximumSignificantDigits: 4 });
    return unit ? text + " " + unit : text;
  }

  function label(path) {
    return path.replace(/^(layouts\.0|estimate|methods|config)\./, "").replace(/\.(\d+)\./g, " $1 ")
      .replace(/[._]/g, " ");
  }

  function renderTable(panel, config, result) {
    const table = panel.querySelector(".aihw-live-result");
    table.replaceChildren();
    for (const [path, unit] of config.show) {
      const row = table.insertRow();
      row.dataset.path = path;
      row.insertCell().textContent = label(path);
      const cell = row.insertCell();
      const value = lookup(result, path);
      cell.textContent = value === undefined ? "—" : format(value, unit);
      cell.dataset.value = value === undefined ? "" : JSON.stringify(value);
    }
  }

  function renderBars(panel, config, result) {
    const box = panel.querySelector(".aihw-live-bars");
    box.replaceChildren();
    for (const [path, unit] of config.bars) {
      const data = lookup(result, path);
      if (!data || typeof data !== "object") continue;
      const entries = Object.entries(data).filter(([, v]) => typeof v === "number");
      const max = Math.max(...entries.map(([, v]) => Math.abs(v)), 1e-300);
      const ns = "http://www.w3.org/2000/svg";
      const rowH = 22, labelW = 140, barW = 260, valueW = 110;
      const svg = document.createElementNS(ns, "svg");
      svg.setAttribute("viewBox", `0 0 ${labelW + barW + valueW} ${rowH * entries.length + 4}`);
      svg.setAttribute("role", "img");
      svg.setAttribute("aria-label", label(path) + " as bars");
      entries.forEach(([name, value], i) => {
        const y = 2 + i * rowH;
        const text = document.createElementNS(ns, "text");
        text.setAttribute("x", labelW - 6); text.setAttribute("y", y + 15);
        text.setAttribute("text-anchor", "end"); text.textContent = name.replace(/_/g, " ");
        const rect = document.createElementNS(ns, "rect");
        rect.setAttribute("x", labelW); rect.setAttribute("y", y + 3);
        rect.setAttribute("width", Math.max(0, (barW * Math.abs(value)) / max));
        rect.setAttribute("height", rowH - 6);
        const val = document.createElementNS(ns, "text");
        val.setAttribute("x", labelW + barW + 6); val.setAttribute("y", y + 15);
        val.textContent = format(value, unit);
        svg.append(text, rect, val);
      });
      box.append(svg);
    }
  }

  function showError(panel, message) {
    panel.querySelectorAll(".aihw-live-error").forEach((e) => { e.textContent = ""; });
    const text = message.replace(/^aihw: error: /, "");
    let target = null;
    for (const field of panel.querySelectorAll(".aihw-live-field")) {
      const word = field.dataset.flag.replace(/^--/, "");
      const re = new RegExp("(^|[^a-z-])(--)?" + word.replace(/-/g, "[-_ ]") + "([^a-z]|$)", "i");
      if (re.test(text)) { target = field; break; }
    }
    const slot = target ? target.querySelector(".aihw-live-error") : null;
    if (slot) slot.textContent = text;
    panel.querySelector(".aihw-live-status").textContent =
      (slot ? "" : text + " ") + "(the last good result is kept below)";
  }

  async function compute(panel) {
    const config = JSON.parse(panel.dataset.config);
    const status = panel.querySelector(".aihw-live-status");
    const started = performance.now();
    if (panel.dataset.state === "idle") {
      panel.dataset.state = "loading";
      status.textContent = "Loading Python (Pyodide) and the aihw package from this book…";
    }
    let run;
    try {
      run = await runner(config.wheel);
    } catch (err) {
      panel.dataset.state = "failed";
      status.textContent = "The live calculator could not start (" + err.message + "); the figure below is " +
        "the static result.";
      return;
    }
    const argv = commandLine(panel);
    const out = JSON.parse(run(config.command, JSON.stringify(argv)));
    const ms = performance.now() - started;
    panel.dataset.lastMs = String(ms);
    panel.dataset.runs = String(Number(panel.dataset.runs || 0) + 1);
    if (!out.ok) {
      panel.dataset.state = "error";
      panel.dataset.error = out.error;
      showError(panel, out.error);
      return;
    }
    panel.dataset.state = "ready";
    panel.dataset.error = "";
    panel.dataset.argv = JSON.stringify(argv);
    panel.dataset.result = JSON.stringify(out.result);
    panel.querySelectorAll(".aihw-live-error").forEach((e) => { e.textContent = ""; });
    status.textContent = `aihw ${config.command} ${argv.join(" ")} --json (computed in your browser, ` +
      `${ms.toFixed(0)} ms)`;
    renderTable(panel, config, out.result);
    renderBars(panel, config, out.result);
  }

  function wire(panel) {
    panel.hidden = false;
    let timer = null;
    const schedule = () => { clearTimeout(timer); timer = setTimeout(() => compute(panel), 150); };
    panel.querySelectorAll("input").forEach((input) => {
      input.addEventListener("input", schedule);
      input.addEventListener("change", schedule);
    });
    panel.querySelector(".aihw-live-run").addEventListener("click", () => compute(panel));
  }

  function init() { document.querySelectorAll(".aihw-live").forEach(wire); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
