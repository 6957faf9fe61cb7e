// Lint runs in `make test`. Syntax-aware rules only: type-aware linting doubles the time on a
// 2-core machine and `tsc --noEmit` already checks the types.
import tseslint from 'typescript-eslint';

// What each program may import: its own folder and lib/ (code shared between programs: the token
// bucket, the config contracts the operator renders and the programs read, web helpers). Tests,
// benchmarks and scripts may import anything, except that no test imports a benchmark. A
// relative import that climbs out of a folder into a name below is refused; the folder names are
// unique in the tree, so the check needs no resolver.
// Test support (test/harness: the in-memory KubeClient, fixtures) never reaches production code,
// which gets its own message: the fix is an injected port, not a move into lib/.
const OTHERS = [
  'operator',
  'sidecar',
  'services',
  'auth-server',
  'user-service',
  'demo-client',
  'scripts',
  'bench',
];
function boundary(folder, own) {
  const names = OTHERS.filter((n) => !own.includes(n)).join('|');
  return {
    files: [`${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./)+(${names})(/|$)`,
              message: `${folder}/ imports only its own files and lib/: move code two programs share into lib/.`,
            },
            {
              regex: '^(\\.\\./)+test(/|$)',
              message: `${folder}/ is production code and never imports test support (test/): take a port as a dependency and pass the test double in from the test.`,
            },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.tools/**',
      'dist/**',
      'test-results/**',
      'bench/results/**',
      'charts/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': [
        'error',
        { object: 'it', property: 'only', message: 'A focused test hides the others.' },
        { object: 'describe', property: 'only', message: 'A focused test hides the others.' },
        { object: 'it', property: 'skip', message: 'A skipped test is not a passing one.' },
        { object: 'describe', property: 'skip', message: 'A skipped test is not a passing one.' },
        { object: 'test', property: 'skip', message: 'A skipped test is not a passing one.' },
      ],
      eqeqeq: ['error', 'always'],
    },
  },
  boundary('lib', []),
  boundary('operator', ['operator']),
  boundary('sidecar', ['sidecar']),
  boundary('services/auth-server', ['auth-server']),
  boundary('services/user-service', ['user-service']),
  boundary('services/demo-client', ['demo-client']),
  // Benchmarks use the test harness; no test depends on a benchmark.
  {
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+bench(/|$)',
              message: 'tests never import bench/: move what both need into test/harness.',
            },
          ],
        },
      ],
    },
  },
  // Benchmarks and the harness build on test support only, never on a test tier's files.
  ...[
    ['bench/**/*.ts', '^(\\.\\./)+test/'],
    ['test/harness/*.ts', '^\\.\\./'],
    ['test/harness/*/**/*.ts', '^\\.\\./\\.\\./'],
  ].map(([files, up]) => ({
    files: [files],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `${up}(unit|integration|browser|k8s|e2e)/`,
              message:
                'import test support (test/harness), not a test tier: move what is shared into test/harness.',
            },
            // Flat config replaces a rule's options per file: the harness keeps the bench/ ban above.
            ...(files.startsWith('test/')
              ? [
                  {
                    regex: '^(\\.\\./)+bench(/|$)',
                    message: 'tests never import bench/: move what both need into test/harness.',
                  },
                ]
              : []),
          ],
        },
      ],
    },
  })),
);
