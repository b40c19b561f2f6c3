// The layering of issue 18, checked by `npm run lint:deps` (part of `npm test`). From the ground
// up: machines/ (pure) → src/subprocess (the seam: providers, PTY transport, input-wait proof)
// → services (jobs, terminals, shell, owners, completions, output) → tools → agents →
// adapters, cli → the composition root (src/runtime.ts, src/runtime-options.ts, src/index.ts).
// A layer may import the ones below it only; type-only imports count (tsPreCompilationDeps).
const SERVICES = '^src/(jobs|terminals|shell|owners|completions|output)/';
const ROOT = '^src/(runtime|runtime-options|index)[.]ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'machines-are-the-ground-floor',
      comment:
        'machines/ is pure XState: it imports nothing from src/ (declare shared facts in machines/facts.ts).',
      severity: 'error',
      from: { path: '^machines/' },
      to: { path: '^(src|workers)/' },
    },
    {
      name: 'machines-are-pure',
      comment: 'machines/ does no I/O: no node: built-ins.',
      severity: 'error',
      from: { path: '^machines/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'seam-imports-no-service',
      comment:
        'src/subprocess (the provider seam, S2) depends on nothing above it: only itself, src/errors.ts and the worker-thread helpers (src/worker-url.ts, src/worker-exec-argv.ts).',
      severity: 'error',
      from: { path: '^src/subprocess/' },
      to: {
        path: '^src/',
        pathNot: '^src/(subprocess/|errors[.]ts$|worker-url[.]ts$|worker-exec-argv[.]ts$)',
      },
    },
    {
      name: 'remote-provider-is-a-seam',
      comment:
        'src/remote (the SSH provider, X1) is a provider: it imports the seam (src/subprocess), itself and src/errors.ts only.',
      severity: 'error',
      from: { path: '^src/remote/' },
      to: { path: '^src/', pathNot: '^src/(subprocess/|remote/|errors[.]ts$)' },
    },
    {
      name: 'services-import-no-tools-agents-or-root',
      comment:
        'A service depends on the seam and other services, never on tools, agents, adapters, cli or the root.',
      severity: 'error',
      from: { path: SERVICES },
      to: { path: ['^src/(tools|agents|adapters|cli)/', ROOT] },
    },
    {
      name: 'tools-import-no-root',
      comment:
        'Tools take service interfaces (ToolRuntime), never the composition root, agents, adapters or cli.',
      severity: 'error',
      from: { path: '^src/tools/' },
      to: { path: ['^src/(agents|adapters|cli)/', ROOT] },
    },
    {
      name: 'agents-import-no-root',
      comment: 'Agents get their services injected; they never import adapters, cli or the root.',
      severity: 'error',
      from: { path: '^src/agents/' },
      to: { path: ['^src/(adapters|cli)/', ROOT] },
    },
    {
      name: 'workers-import-only-the-seam',
      comment: 'Worker threads speak the PTY protocol of the seam; they import no service or root.',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^src/', pathNot: '^src/(subprocess/|errors[.]ts$)' },
    },
    {
      name: 'observe-is-a-leaf-the-services-emit-into',
      comment:
        'src/observe (V1: the fact stream and its log) is below the services: it imports only itself, the seam, errors and machines.',
      severity: 'error',
      from: { path: '^src/observe/' },
      to: { path: '^src/', pathNot: '^src/(observe/|subprocess/|errors[.]ts$)' },
    },
    {
      name: 'mirror-reads-facts-only',
      comment:
        'src/mirror (V2-V4) is an adapter over the fact stream: it imports observe, errors and itself, never a service or the root.',
      severity: 'error',
      from: { path: '^src/mirror/' },
      to: { path: ['^src/(jobs|terminals|shell|owners|completions|output|tools|agents|adapters)/', ROOT] },
    },
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only ones included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
