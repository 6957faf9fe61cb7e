// Lint runs in `make test`. Syntax-aware rules only: type-aware linting doubles the time on a
// 2-core machine and `tsc --noEmit` already checks the types.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', 'dist/**', 'test-results/**', 'bench/results/**', 'charts/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
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
);
