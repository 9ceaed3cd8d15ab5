// runread console: the little the pages need beyond HTML. No inline script anywhere (the
// Content-Security-Policy allows only this file).
"use strict";

// The run list refreshes its rows in place while agents write (no full reload).
function pollRuns() {
  const box = document.getElementById("runs");
  if (!box) return;
  const url = box.dataset.rows;
  const every = Number(box.dataset.pollMs) || 2000;
  let last = box.innerHTML;
  async function tick() {
    if (document.visibilityState === "visible") {
      try {
        const r = await fetch(url, { credentials: "same-origin", headers: { accept: "text/html" } });
        if (r.ok) {
          const html = await r.text();
          if (html !== last) {
            box.innerHTML = html;
            last = html;
          }
        } else if (r.status === 401) {
          return; // logged out: stop asking
        }
      } catch (_) { /* the console restarted; keep trying */ }
    }
    setTimeout(tick, every);
  }
  setTimeout(tick, every);
}

// Copy buttons next to each config.
function copyButtons() {
  for (const b of document.querySelectorAll("button[data-copy]")) {
    b.addEventListener("click", async () => {
      const el = document.getElementById(b.dataset.copy);
      if (!el) return;
      try {
        await navigator.clipboard.writeText(el.textContent);
        b.textContent = "Copied";
      } catch (_) {
        const range = document.createRange();
        range.selectNodeContents(el);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        b.textContent = "Selected: press Ctrl+C";
      }
      setTimeout(() => { b.textContent = "Copy"; }, 2000);
    });
  }
}

// Revocations ask first.
function confirms() {
  for (const f of document.querySelectorAll("form[data-confirm]")) {
    f.addEventListener("submit", (e) => {
      if (!window.confirm(f.dataset.confirm)) e.preventDefault();
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  pollRuns();
  copyButtons();
  confirms();
});
