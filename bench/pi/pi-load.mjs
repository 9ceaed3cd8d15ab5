// Pi's own loader on one session file, timed in process after a warm-up: the peer of
// `runread-bench ingest`. Uses SessionManager from the pinned @mariozechner/pi-coding-agent
// (installed by the harness), on a temporary copy (Pi may rewrite old-version files on open).
//
// Usage: node pi-load.mjs SESSION.jsonl REPEATS WARMUP
// Env:   PI_DIST (default ~/.cache/runread-harness/pi-0.73.1/node_modules/@mariozechner/pi-coding-agent/dist)
// Prints JSON: entries Pi loaded, and per repeat the seconds of SessionManager.open (read, parse,
// index) and of open + buildSessionContext (the active branch's messages, what Pi resumes from).
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = process.env.PI_DIST ??
  join(homedir(), ".cache/runread-harness/pi-0.73.1/node_modules/@mariozechner/pi-coding-agent/dist");
const { SessionManager } = await import(pathToFileURL(join(dist, "core/session-manager.js")).href);

const [file, repeats = "3", warmup = "1"] = process.argv.slice(2);
const tmp = mkdtempSync(join(tmpdir(), "pi-load-"));
const copy = join(tmp, basename(file));
cpSync(file, copy);

const open = [];
const openContext = [];
let entries = 0;
let messages = 0;
for (let i = 0; i < Number(warmup) + Number(repeats); i++) {
  const t0 = process.hrtime.bigint();
  const sm = SessionManager.open(copy, tmp);
  const t1 = process.hrtime.bigint();
  const ctx = sm.buildSessionContext();
  const t2 = process.hrtime.bigint();
  entries = sm.getEntries().length;
  messages = ctx.messages.length;
  if (i >= Number(warmup)) {
    open.push(Number(t1 - t0) / 1e9);
    openContext.push(Number(t2 - t0) / 1e9);
  }
}
rmSync(tmp, { recursive: true, force: true });
console.log(JSON.stringify({ entries, messages, open_s: open, open_context_s: openContext }));
