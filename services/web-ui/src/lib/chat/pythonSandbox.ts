/**
 * The document of the Python sandbox: an `<iframe sandbox="allow-scripts" srcdoc=…>` (opaque
 * origin: no cookies, no storage, no access to the page) that loads Pyodide from this server by
 * absolute URL — `${origin}/pyodide/pyodide.mjs` — on its first run and runs the code in a
 * worker inside the frame (so a busy loop never freezes the page; the page removes the frame on
 * timeout). Output is written into the frame (`#output`, `#status`) and posted to the parent:
 *   frame → parent  {gh: 'py', type: 'ready'}
 *   parent → frame  {gh: 'py', type: 'run', runId, code}
 *   frame → parent  {gh: 'py', type: 'status', runId, status: 'loading' | 'running'}
 *                   {gh: 'py', type: 'output', runId, stream: 'stdout' | 'stderr', text}
 *                   {gh: 'py', type: 'done', runId, error: boolean}
 */

/** Runs in the worker (or, if the frame cannot start one, in the frame itself). */
const RUNTIME = String.raw`
function makeRuntime(post, indexURL) {
  let py = null;
  return async function run(runId, code) {
    try {
      if (!py) {
        post({ type: 'status', runId, status: 'loading' });
        const mod = await import(indexURL + 'pyodide.mjs');
        py = await mod.loadPyodide({ indexURL });
      }
      py.setStdout({ batched: (text) => post({ type: 'output', runId, stream: 'stdout', text: text + '\n' }) });
      py.setStderr({ batched: (text) => post({ type: 'output', runId, stream: 'stderr', text: text + '\n' }) });
      post({ type: 'status', runId, status: 'running' });
      await py.runPythonAsync(code);
      post({ type: 'done', runId, error: false });
    } catch (err) {
      post({ type: 'output', runId, stream: 'stderr', text: String((err && err.message) || err) + '\n' });
      post({ type: 'done', runId, error: true });
    }
  };
}
`;

const FRAME_SCRIPT = String.raw`
${RUNTIME}
(() => {
  const INDEX_URL = __INDEX_URL__;
  const out = document.getElementById('output');
  const status = document.getElementById('status');
  const toParent = (m) => parent.postMessage(Object.assign({ gh: 'py' }, m), '*');
  function show(m) {
    if (m.type === 'status') status.textContent = m.status === 'loading' ? 'Loading Python…' : 'Running…';
    else if (m.type === 'output') out.textContent += m.text;
    else if (m.type === 'done') status.textContent = m.error ? 'Error' : 'Done';
    toParent(m);
  }
  let run = null;
  let worker = null;
  let pending = null;
  let workerReady = false;
  function inline() {
    run = makeRuntime(show, INDEX_URL);
  }
  try {
    const src = ${JSON.stringify(RUNTIME)} +
      'const run = makeRuntime((m) => self.postMessage(m), ' + JSON.stringify(INDEX_URL) + ');' +
      'self.onmessage = (e) => { if (e.data && e.data.type === "run") run(e.data.runId, e.data.code); };' +
      'self.postMessage({ type: "worker-ready" });';
    // A data: URL module worker: in an opaque-origin frame a blob: module worker is refused, and
    // Pyodide needs a module worker.
    worker = new Worker('data:text/javascript,' + encodeURIComponent(src), { type: 'module' });
    worker.onmessage = (e) => {
      if (e.data && e.data.type === 'worker-ready') {
        workerReady = true;
        if (pending) { worker.postMessage(pending); pending = null; }
        return;
      }
      show(e.data);
    };
    worker.onerror = () => {
      if (workerReady) return;
      worker = null;
      inline();
      if (pending) { const p = pending; pending = null; run(p.runId, p.code); }
    };
  } catch (e) {
    worker = null;
    inline();
  }
  window.addEventListener('message', (e) => {
    if (e.source !== parent) return;
    const m = e.data;
    if (!m || m.gh !== 'py' || m.type !== 'run' || typeof m.code !== 'string') return;
    out.textContent = '';
    const job = { type: 'run', runId: m.runId, code: m.code };
    if (worker && workerReady) worker.postMessage(job);
    else if (worker) pending = job;
    else run(m.runId, m.code);
  });
  toParent({ type: 'ready' });
})();
`;

/** The srcdoc for a sandbox frame that loads Pyodide from `origin` + `/pyodide/`. */
export function sandboxDocument(origin: string): string {
  const indexURL = `${origin.replace(/\/+$/, '')}/pyodide/`;
  const script = FRAME_SCRIPT.replace('__INDEX_URL__', JSON.stringify(indexURL)).replace(/<\/script/gi, '<\\/script');
  return `<!doctype html><html><head><meta charset="utf-8"><title>Python sandbox</title>
<style>body{margin:0;font:12px/1.4 ui-monospace,monospace;color:#333}#status{color:#888}pre{margin:0;white-space:pre-wrap;word-break:break-word}</style>
<script>document.addEventListener('DOMContentLoaded', () => {${script}});</script>
</head><body><div id="status"></div><pre id="output"></pre></body></html>`;
}
