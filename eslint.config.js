// ESLint with typescript-eslint's type-checked preset over the TypeScript tree (src, test, bench, web/src).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** typescript-eslint's rules about values typed `any`: tests read foreign wire formats (`await res.json()`) loosely. */
const UNSAFE_ANY_RULES = [
  'no-unsafe-argument',
  'no-unsafe-assignment',
  'no-unsafe-call',
  'no-unsafe-member-access',
  'no-unsafe-return',
];

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'data/',
      'coverage/',
      'test-results/',
      'web/build.mjs',
      'web/build.d.mts',
      'examples/',
      'bench/.build/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // A value from outside (a body, an upstream's JSON) is checked by a schema or a guard, never asserted into a
      // type; `as const` and widening stay allowed.
      '@typescript-eslint/consistent-type-assertions': [
        'error',
        { assertionStyle: 'as', objectLiteralTypeAssertions: 'never' },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    // Tests and the benchmark handle foreign wire formats loosely on purpose.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      ...Object.fromEntries(UNSAFE_ANY_RULES.map((rule) => [`@typescript-eslint/${rule}`, 'off'])),
    },
  },
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
);
