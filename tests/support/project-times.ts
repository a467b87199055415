import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * A vitest reporter that says where the run's time goes: each project's wall time (its first file
 * started to its last file ended; the projects run one after another, by groupOrder) and its
 * slowest files, each file's time including its hooks (the stack it starts in beforeAll). The
 * JSON reporter's per-file times leave the hooks out, which is most of an integration file.
 * scripts/test adds it; `PROJECT_TIMES_FILE` also writes the numbers as JSON.
 */
interface FileTime {
  file: string;
  startMs: number;
  endMs: number;
}

const SLOWEST = 5;

export default class ProjectTimes implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly files = new Map<string, FileTime[]>();

  onTestModuleStart(m: TestModule): void {
    this.started.set(m.moduleId, performance.now());
  }

  onTestModuleEnd(m: TestModule): void {
    const startMs = this.started.get(m.moduleId) ?? performance.now();
    const list = this.files.get(m.project.name) ?? [];
    list.push({ file: relative(process.cwd(), m.moduleId), startMs, endMs: performance.now() });
    this.files.set(m.project.name, list);
  }

  onTestRunEnd(): void {
    const summary = [...this.files].map(([project, files]) => {
      const wallS = (Math.max(...files.map((f) => f.endMs)) - Math.min(...files.map((f) => f.startMs))) / 1000;
      const slowest = files
        .map((f) => ({ file: f.file, s: (f.endMs - f.startMs) / 1000 }))
        .sort((a, b) => b.s - a.s)
        .slice(0, SLOWEST);
      return { project, files: files.length, wallS, fileSecondsSum: files.reduce((n, f) => n + (f.endMs - f.startMs) / 1000, 0), slowest };
    });
    const lines = summary.map(
      (p) =>
        `[test] project ${p.project}: ${p.wallS.toFixed(1)} s, ${p.files} file(s), ${p.fileSecondsSum.toFixed(0)} file-seconds; slowest: ` +
        p.slowest.map((f) => `${f.file} ${f.s.toFixed(1)} s`).join(', '),
    );
    process.stderr.write(`${lines.join('\n')}\n`);
    const out = process.env.PROJECT_TIMES_FILE;
    if (out) writeFileSync(out, `${JSON.stringify(summary, null, 2)}\n`);
  }
}
