import { defineConfig } from 'vitest/config';

/** Unit tests beside the code that need the shared Postgres or Redis (the db project). */
const DB_UNIT_TESTS = [
  'services/vector-worker/src/store/**/*.test.ts',
  'services/edge/src/faces/chat/session-store.test.ts',
  'services/edge/src/faces/chat/session-cache.test.ts',
  'services/edge/src/kit/stream-limits.test.ts',
];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // Needs nothing running: no Postgres, NATS or Redis (those tests are the db project's).
          sequence: { groupOrder: 0 },
          include: ['contracts/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'scripts/src/**/*.test.ts'],
          exclude: DB_UNIT_TESTS,
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'db',
          // Unit tests on the shared Postgres (the vector store on a schema of its own) or Redis
          // (the edge's sessions and stream slots), and the harness's own schema template.
          sequence: { groupOrder: 0 },
          include: [...DB_UNIT_TESTS, 'tests/support/**/*.test.ts'],
          globalSetup: ['tests/integration/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'security',
          // Beside the unit tests: the tree's secret scan and the dependency audit (tests/security).
          sequence: { groupOrder: 0 },
          include: ['tests/security/**/*.test.ts'],
          exclude: ['tests/security/log-audit.test.ts'],
          testTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'integration',
          // Runs after the unit project, with its own worker limit.
          sequence: { groupOrder: 1 },
          include: ['tests/integration/**/*.test.ts', 'tests/hostile/**/*.test.ts'],
          globalSetup: ['tests/integration/global-setup.ts'],
          testTimeout: 60_000,
          // A file's set-up starts its edge and workers; with another file's doing the same on 2
          // cores it can pass a minute (resource-limits starts eight processes). A limit, not a pace.
          hookTimeout: 180_000,
          // Each file starts its own edge and workers; two at a time keeps a 2-core machine sane.
          maxWorkers: 2,
        },
      },
      {
        test: {
          name: 'faults',
          // After the integration suite: each file starts its own NATS, Postgres and Redis
          // (scripts/src/private-infra.ts) and restarts or kills them under load; one at a time.
          sequence: { groupOrder: 2 },
          include: ['tests/faults/**/*.test.ts'],
          globalSetup: ['tests/integration/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 240_000,
          maxWorkers: 1,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'browser',
          // Last: a real chromium against a real stack, one file at a time.
          sequence: { groupOrder: 3 },
          include: ['tests/browser/**/*.test.ts'],
          // The services (as the integration suite), a fresh build of services/web-ui, chromium.
          globalSetup: ['tests/integration/global-setup.ts', 'tests/browser/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          maxWorkers: 1,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'log-audit',
          // After everything else: reads what every service process of the run said (log-scan.ts).
          sequence: { groupOrder: 4 },
          include: ['tests/security/log-audit.test.ts'],
        },
      },
    ],
  },
});
