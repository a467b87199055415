import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { chromiumPath } from './browser-fixture.ts';

/**
 * Before any browser test: the chromium the tests drive must be there (fails with the fix), and
 * services/web-ui/dist must be the build of the current sources — the same step scripts/start and
 * scripts/test run (quick when the stamp matches, a Vite build otherwise).
 */
export default function setup(): void {
  chromiumPath();
  const root = join(import.meta.dirname, '..', '..');
  try {
    execFileSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'src', 'build-web-ui.ts')], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    throw new Error('the web UI did not build (Vite output above). Fix services/web-ui, then run: node --import tsx scripts/src/build-web-ui.ts');
  }
}
